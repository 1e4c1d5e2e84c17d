package gateway

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"database/sql"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/dolthub/vitess/go/mysql"
	gosql "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
)

// selfSigned returns a server certificate for 127.0.0.1 and a client
// configuration that trusts it.
func selfSigned(t *testing.T) (*tls.Config, *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "augustus-gateway-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}},
		&tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
}

func sha2Hash(t *testing.T, pw string) string {
	t.Helper()
	salt := make([]byte, 20)
	for i := range salt {
		salt[i] = 'a' + byte(i) // printable, as MySQL's salts are
	}
	s, err := mysql.SerializeCachingSha2PasswordAuthString(pw, salt, 5)
	require.NoError(t, err)
	return string(s)
}

func TestTLSAndCachingSHA2Accounts(t *testing.T) {
	server, client := selfSigned(t)
	require.NoError(t, gosql.RegisterTLSConfig("gwtest", client))
	tg := newTestGateway(t, gwOptions{
		users: []User{
			{Name: "root", AuthString: passwordHash("native-pw")},
			{Name: "app", Plugin: string(mysql.CachingSha2Password), AuthString: sha2Hash(t, "sha2-pw")},
		},
		cfg: func(c *Config) { c.TLS = server },
	})
	ping := func(user, pw string, params ...string) error {
		db, err := sql.Open("mysql", tg.dsn(user, pw, "", params...))
		require.NoError(t, err)
		defer db.Close()
		return db.Ping()
	}
	require.NoError(t, ping("root", "native-pw"), "native without TLS")
	require.NoError(t, ping("root", "native-pw", "tls=gwtest"), "native over TLS")
	require.NoError(t, ping("app", "sha2-pw", "tls=gwtest"), "caching_sha2_password's full authentication over TLS")
	err := ping("app", "wrong", "tls=gwtest")
	require.EqualValues(t, 1045, mysqlCode(err), "%v", err)
	err = ping("app", "sha2-pw")
	require.EqualValues(t, 1045, mysqlCode(err), "%v", err)
	require.Contains(t, err.Error(), "needs a TLS connection")

	db := tg.open(t, tg.dsn("app", "sha2-pw", "", "tls=gwtest"))
	var name string
	require.NoError(t, db.QueryRow("SELECT CURRENT_USER()").Scan(&name))
	require.Contains(t, name, "app")
}

func TestRequireTLSRefusesPlainConnections(t *testing.T) {
	server, client := selfSigned(t)
	require.NoError(t, gosql.RegisterTLSConfig("gwtest-require", client))
	tg := newTestGateway(t, gwOptions{cfg: func(c *Config) { c.TLS, c.RequireTLS = server, true }})
	db, err := sql.Open("mysql", tg.dsn("root", "", ""))
	require.NoError(t, err)
	defer db.Close()
	require.Error(t, db.Ping())
	db2, err := sql.Open("mysql", tg.dsn("root", "", "", "tls=gwtest-require"))
	require.NoError(t, err)
	defer db2.Close()
	require.NoError(t, db2.Ping())
}
