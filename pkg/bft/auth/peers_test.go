package auth

import (
	"crypto/ed25519"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPeerKeysIdentifiesTheReplicaOfAHandshake(t *testing.T) {
	g := newGroup(t, 4)
	pk, err := NewPeerKeys(g.pubs)
	require.NoError(t, err)
	require.Equal(t, 4, pk.Len())
	srv, cli := handshake(t,
		serverConfig(t, g.privs[1], pk.Accept, true),
		clientConfig(t, g.privs[3], pk.Accept))
	require.NoError(t, srv.err)
	require.NoError(t, cli.err)

	id, err := pk.Identify(srv.state)
	require.NoError(t, err)
	require.Equal(t, uint32(3), id)
	id, err = pk.Identify(cli.state)
	require.NoError(t, err)
	require.Equal(t, uint32(1), id)
}

func TestPeerKeysRefusesStrangers(t *testing.T) {
	g := newGroup(t, 4)
	pk, err := NewPeerKeys(g.pubs[:3])
	require.NoError(t, err)
	require.ErrorIs(t, pk.Accept(g.pubs[3]), ErrUnknownPeer)
	require.NoError(t, pk.Accept(g.pubs[2]))
	_, ok := pk.Index(g.pubs[3])
	require.False(t, ok)
	_, ok = pk.Index(g.pubs[3][:5])
	require.False(t, ok)
	k, ok := pk.Key(2)
	require.True(t, ok)
	require.Equal(t, g.pubs[2], k)
	_, ok = pk.Key(3)
	require.False(t, ok)

	// A handshake with a known server, whose own key the client's set lacks.
	srv, cli := handshake(t,
		serverConfig(t, g.privs[3], AcceptKeys(g.pubs...), true),
		clientConfig(t, g.privs[0], AcceptKeys(g.pubs...)))
	require.NoError(t, srv.err)
	require.NoError(t, cli.err)
	_, err = pk.Identify(cli.state)
	require.ErrorIs(t, err, ErrUnknownPeer)
}

func TestNewPeerKeysRejectsMalformedAndDuplicateKeys(t *testing.T) {
	g := newGroup(t, 2)
	_, err := NewPeerKeys([]ed25519.PublicKey{g.pubs[0], make([]byte, 31)})
	require.ErrorIs(t, err, ErrMalformedKey)
	_, err = NewPeerKeys([]ed25519.PublicKey{g.pubs[0], g.pubs[1], g.pubs[0]})
	require.ErrorContains(t, err, "same key")
}
