package auth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type handshakeResult struct {
	state tls.ConnectionState
	err   error
}

// handshake connects a TLS client and server over loopback TCP. The server
// writes "ok" after its handshake and the client reads it, so a rejection
// by the server (which in TLS 1.3 happens after the client's handshake has
// returned) reaches the client as a read error.
func handshake(t *testing.T, server, client *tls.Config) (srv, cli handshakeResult) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	deadline := time.Now().Add(20 * time.Second)
	done := make(chan handshakeResult, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- handshakeResult{err: err}
			return
		}
		defer c.Close()
		_ = c.SetDeadline(deadline)
		tc := tls.Server(c, server)
		if err := tc.Handshake(); err != nil {
			done <- handshakeResult{err: err}
			return
		}
		_, err = tc.Write([]byte("ok"))
		done <- handshakeResult{state: tc.ConnectionState(), err: err}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	_ = c.SetDeadline(deadline)
	tc := tls.Client(c, client)
	cli.err = tc.Handshake()
	if cli.err == nil {
		buf := make([]byte, 2)
		_, cli.err = io.ReadFull(tc, buf)
		cli.state = tc.ConnectionState()
	}
	return <-done, cli
}

func serverConfig(t *testing.T, own ed25519.PrivateKey, accept func(ed25519.PublicKey) error, requireCert bool) *tls.Config {
	t.Helper()
	cfg, err := ServerTLSConfig(own, accept, requireCert)
	require.NoError(t, err)
	return cfg
}

func clientConfig(t *testing.T, own ed25519.PrivateKey, expect func(ed25519.PublicKey) error) *tls.Config {
	t.Helper()
	cfg, err := ClientTLSConfig(own, expect)
	require.NoError(t, err)
	return cfg
}

func TestMutualTLSAcceptsKnownPeersAndIdentifiesThem(t *testing.T) {
	g := newGroup(t, 4)
	srvKey, cliKey := g.privs[0], g.privs[2]
	srv, cli := handshake(t,
		serverConfig(t, srvKey, AcceptKeys(g.pubs...), true),
		clientConfig(t, cliKey, AcceptKeys(g.pubs...)))
	require.NoError(t, srv.err)
	require.NoError(t, cli.err)
	require.Equal(t, uint16(tls.VersionTLS13), cli.state.Version)

	got, err := PeerIdentity(srv.state)
	require.NoError(t, err)
	require.Equal(t, g.pubs[2], got)
	got, err = PeerIdentity(cli.state)
	require.NoError(t, err)
	require.Equal(t, g.pubs[0], got)
}

func TestServerRejectsAClientWithAnUnknownKey(t *testing.T) {
	g := newGroup(t, 4)
	stranger := newKey(t)
	srv, cli := handshake(t,
		serverConfig(t, g.privs[0], AcceptKeys(g.pubs...), true),
		clientConfig(t, stranger, AcceptKeys(g.pubs...)))
	require.ErrorIs(t, srv.err, ErrUnknownPeer)
	require.Error(t, cli.err)
}

func TestClientRejectsAServerWithAnUnknownKey(t *testing.T) {
	g := newGroup(t, 4)
	impostor := newKey(t)
	srv, cli := handshake(t,
		serverConfig(t, impostor, AcceptKeys(g.pubs...), true),
		clientConfig(t, g.privs[1], AcceptKeys(g.pubs[0])))
	require.ErrorIs(t, cli.err, ErrUnknownPeer)
	require.Error(t, srv.err)
}

func TestServerRejectsAClientWithoutCertificateWhenRequired(t *testing.T) {
	g := newGroup(t, 4)
	srv, cli := handshake(t,
		serverConfig(t, g.privs[0], AcceptKeys(g.pubs...), true),
		clientConfig(t, nil, AcceptKeys(g.pubs...)))
	require.Error(t, srv.err)
	require.Error(t, cli.err)
}

func TestServerAcceptsAClientWithoutCertificateWhenOptional(t *testing.T) {
	g := newGroup(t, 4)
	srv, cli := handshake(t,
		serverConfig(t, g.privs[0], AcceptKeys(g.pubs...), false),
		clientConfig(t, nil, AcceptKeys(g.pubs[0])))
	require.NoError(t, srv.err)
	require.NoError(t, cli.err)
	_, err := PeerIdentity(srv.state)
	require.ErrorIs(t, err, ErrNoPeerCertificate)
}

func TestServerChecksAnOptionalClientCertificateThatIsPresented(t *testing.T) {
	g := newGroup(t, 4)
	srv, cli := handshake(t,
		serverConfig(t, g.privs[0], AcceptKeys(g.pubs...), false),
		clientConfig(t, newKey(t), AcceptKeys(g.pubs[0])))
	require.ErrorIs(t, srv.err, ErrUnknownPeer)
	require.Error(t, cli.err)
}

func TestServerWithoutAcceptanceFunctionDoesNotAskForClientCertificates(t *testing.T) {
	g := newGroup(t, 4)
	srv, cli := handshake(t,
		serverConfig(t, g.privs[0], nil, false),
		clientConfig(t, newKey(t), AcceptKeys(g.pubs[0])))
	require.NoError(t, srv.err)
	require.NoError(t, cli.err)
	_, err := PeerIdentity(srv.state)
	require.ErrorIs(t, err, ErrNoPeerCertificate)
}

func TestServerRejectsACertificateWithANonEd25519Key(t *testing.T) {
	g := newGroup(t, 4)
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ec"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &ec.PublicKey, ec)
	require.NoError(t, err)
	cli := clientConfig(t, nil, AcceptKeys(g.pubs[0]))
	cli.Certificates = []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: ec}}
	srv, _ := handshake(t, serverConfig(t, g.privs[0], AcceptKeys(g.pubs...), true), cli)
	require.ErrorIs(t, srv.err, ErrNoPeerCertificate)
}

func TestTLSConfigsRefuseToAcceptEveryone(t *testing.T) {
	_, err := ServerTLSConfig(newKey(t), nil, true)
	require.Error(t, err)
	_, err = ClientTLSConfig(newKey(t), nil)
	require.Error(t, err)
	_, err = ServerTLSConfig(make([]byte, 3), AcceptKeys(), false)
	require.ErrorIs(t, err, ErrMalformedKey)
}

func TestCertificateIsDeterministicAndCarriesTheKey(t *testing.T) {
	priv := newKey(t)
	c1, err := Certificate(priv)
	require.NoError(t, err)
	c2, err := Certificate(priv)
	require.NoError(t, err)
	require.Equal(t, c1.Certificate, c2.Certificate)
	require.Equal(t, PublicKeyOf(priv), c1.Leaf.PublicKey)
	require.NoError(t, c1.Leaf.CheckSignature(c1.Leaf.SignatureAlgorithm, c1.Leaf.RawTBSCertificate, c1.Leaf.Signature), "self-signed")
}

func TestPeerIdentityRequiresACompletedHandshake(t *testing.T) {
	_, err := PeerIdentity(tls.ConnectionState{})
	require.Error(t, err)
}
