package gateway

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
)

// authServer authenticates clients against the cluster's accounts
// (vitess's mysql.AuthServer). GMS's own (its mysql database of users and
// grants) is not used: it wraps every database in a privilege checker that
// costs each statement a privilege lookup and hides interfaces the backend
// does not implement, while every account here has every privilege anyway
// (User). With GMS's user database off, GMS checks no privileges.
type authServer struct {
	byName     map[string][]User
	requireTLS bool
	methods    []mysql.AuthMethod
}

// newAuthServer checks the accounts and builds the server. mysql_native_
// password comes first: it is what the gateway announces, and what clients
// switch to for accounts of that plugin.
func newAuthServer(users []User, requireTLS bool) (*authServer, error) {
	if len(users) == 0 {
		return nil, errors.New("gateway: no SQL account: the cluster file lists none in sql_users (augustus init creates root; see README's SQL section)")
	}
	a := &authServer{byName: map[string][]User{}, requireTLS: requireTLS}
	seen := map[string]bool{}
	for _, u := range users {
		if err := u.check(); err != nil {
			return nil, fmt.Errorf("gateway: %w", err)
		}
		if u.Host == "" {
			u.Host = "%"
		}
		if u.Plugin == "" {
			u.Plugin = string(mysql.MysqlNativePassword)
		}
		if id := u.Name + "@" + u.Host; seen[id] {
			return nil, fmt.Errorf("gateway: account %s appears twice", id)
		} else {
			seen[id] = true
		}
		a.byName[u.Name] = append(a.byName[u.Name], u)
	}
	native := &method{AuthMethod: mysql.NewMysqlNativeAuthMethod(nativeStorage{a}, validator{a, string(mysql.MysqlNativePassword)}), a: a}
	sha2 := &method{AuthMethod: mysql.NewSha2CachingAuthMethod(sha2Cache{a}, sha2Storage{a}, validator{a, string(mysql.CachingSha2Password)}), a: a}
	a.methods = []mysql.AuthMethod{native, sha2}
	return a, nil
}

func (a *authServer) AuthMethods() []mysql.AuthMethod { return a.methods }

func (a *authServer) DefaultAuthMethodDescription() mysql.AuthMethodDescription {
	return mysql.MysqlNativePassword
}

// lookup returns the account of user for a client at addr: an account for
// its exact host first, then "localhost" for loopback clients, then "%"
// (MySQL's most-specific-first rule).
func (a *authServer) lookup(user string, addr net.Addr) *User {
	accounts := a.byName[user]
	if len(accounts) == 0 {
		return nil
	}
	host := hostOf(addr)
	loopback := host == "localhost"
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		loopback = true
	}
	var local, any *User
	for i := range accounts {
		u := &accounts[i]
		switch {
		case strings.EqualFold(u.Host, host):
			return u
		case u.Host == "localhost" && loopback:
			local = u
		case u.Host == "%":
			any = u
		}
	}
	if local != nil {
		return local
	}
	return any
}

func hostOf(addr net.Addr) string {
	if addr == nil || addr.Network() == "unix" {
		return "localhost"
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	return host
}

func denied(user, why string) error {
	if why != "" {
		why = ": " + why
	}
	return mysql.NewSQLError(mysql.ERAccessDeniedError, mysql.SSAccessDeniedError, "Access denied for user '%v'%s", user, why)
}

// method wraps vitess's auth methods with the checks that need the
// connection: TLS when required, and a caching_sha2_password account on a
// connection without TLS, which the native method then refuses with the
// reason (vitess would say only that no method is available).
type method struct {
	mysql.AuthMethod
	a *authServer
}

func (m *method) HandleUser(c *mysql.Conn, user string) bool {
	if m.Name() == mysql.MysqlNativePassword {
		u := m.a.lookup(user, c.RemoteAddr())
		// Unknown users are handled, and refused with 1045 by the storage.
		return u == nil || u.Plugin == string(mysql.MysqlNativePassword) || !c.TLSEnabled()
	}
	return m.AuthMethod.HandleUser(c, user)
}

func (m *method) HandleAuthPluginData(c *mysql.Conn, user string, server, client []byte, addr net.Addr) (mysql.Getter, error) {
	if m.a.requireTLS && !c.TLSEnabled() {
		return nil, denied(user, "this gateway accepts TLS connections only")
	}
	if m.Name() == mysql.MysqlNativePassword {
		if u := m.a.lookup(user, addr); u != nil && u.Plugin == string(mysql.CachingSha2Password) {
			return nil, denied(user, "the account uses caching_sha2_password, which needs a TLS connection")
		}
	}
	return m.AuthMethod.HandleAuthPluginData(c, user, server, client, addr)
}

// validator says whether an account exists for a plugin.
type validator struct {
	a      *authServer
	plugin string
}

func (v validator) HandleUser(user string, addr net.Addr) bool {
	u := v.a.lookup(user, addr)
	return u != nil && u.Plugin == v.plugin
}

func connectionUser(u *User, addr net.Addr) mysql.Getter {
	return sql.MysqlConnectionUser{User: u.Name, Host: hostOf(addr)}
}

// nativeStorage checks mysql_native_password replies against the stored
// SHA1(SHA1(password)).
type nativeStorage struct{ a *authServer }

func (s nativeStorage) UserEntryWithHash(_ []*x509.Certificate, salt []byte, user string, reply []byte, addr net.Addr) (mysql.Getter, error) {
	u := s.a.lookup(user, addr)
	if u == nil {
		return nil, denied(user, "")
	}
	if u.AuthString == "" {
		if len(reply) > 0 {
			return nil, denied(user, "")
		}
		return connectionUser(u, addr), nil
	}
	hash, err := mysql.DecodeMysqlNativePasswordHex(u.AuthString)
	if err != nil || !mysql.VerifyHashedMysqlNativePassword(reply, salt, hash) {
		return nil, denied(user, "")
	}
	return connectionUser(u, addr), nil
}

// sha2Cache is caching_sha2_password's fast path: it has no cache (a
// cached scramble would have to be forgotten when the cluster file
// changes), so it accepts only accounts without a password and asks for
// the full authentication otherwise.
type sha2Cache struct{ a *authServer }

func (s sha2Cache) UserEntryWithCacheHash(_ []*x509.Certificate, _ []byte, user string, reply []byte, addr net.Addr) (mysql.Getter, mysql.CacheState, error) {
	u := s.a.lookup(user, addr)
	if u == nil {
		return nil, mysql.AuthRejected, denied(user, "")
	}
	if len(reply) == 0 || (len(reply) == 1 && reply[0] == 0) {
		if u.AuthString == "" {
			return connectionUser(u, addr), mysql.AuthAccepted, nil
		}
		return nil, mysql.AuthRejected, denied(user, "")
	}
	return nil, mysql.AuthNeedMoreData, nil
}

// sha2Storage checks the password of caching_sha2_password's full
// authentication (sent over TLS) against the stored SHA-256 crypt string.
type sha2Storage struct{ a *authServer }

func (s sha2Storage) UserEntryWithPassword(_ []*x509.Certificate, user, password string, addr net.Addr) (mysql.Getter, error) {
	u := s.a.lookup(user, addr)
	if u == nil {
		return nil, denied(user, "")
	}
	if u.AuthString == "" {
		if password != "" {
			return nil, denied(user, "")
		}
		return connectionUser(u, addr), nil
	}
	_, iterations, salt, _, err := mysql.DeserializeCachingSha2PasswordAuthString([]byte(u.AuthString))
	if err != nil {
		return nil, denied(user, "")
	}
	got, err := mysql.SerializeCachingSha2PasswordAuthString(password, salt, iterations)
	if err != nil || string(got) != u.AuthString {
		return nil, denied(user, "")
	}
	return connectionUser(u, addr), nil
}
