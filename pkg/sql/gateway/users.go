package gateway

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/dolthub/vitess/go/mysql"
)

// User is a MySQL account of the gateway, as the cluster file lists it
// (pkg/bft/cluster's SQLUser). Every account has every privilege: the
// cluster's security rests on who holds a password (and on the replicas'
// quorums, which a gateway cannot forge), not on grants.
type User struct {
	// Name is the user name.
	Name string
	// Host is the client host the account admits: "%" (any; the default
	// when empty), "localhost" (loopback), or an exact host or address.
	Host string
	// Plugin is mysql.MysqlNativePassword (the default when empty) or
	// mysql.CachingSha2Password (whose full authentication sends the
	// password, so vitess offers it over TLS only).
	Plugin string
	// AuthString is the password hash as MySQL stores it: empty (no
	// password), "*" + 40 hex digits (mysql_native_password) or "$A$005$..."
	// (caching_sha2_password).
	AuthString string
}

var nativeHash = regexp.MustCompile(`^\*[0-9A-F]{40}$`)

// check validates one account.
func (u User) check() error {
	if u.Name == "" {
		return errors.New("an account without a name")
	}
	switch u.Plugin {
	case "", string(mysql.MysqlNativePassword):
		if u.AuthString != "" && !nativeHash.MatchString(u.AuthString) {
			return fmt.Errorf("account %s: the mysql_native_password hash must be \"*\" and 40 upper-case hex digits", u.Name)
		}
	case string(mysql.CachingSha2Password):
		if u.AuthString != "" {
			digest, _, _, _, err := mysql.DeserializeCachingSha2PasswordAuthString([]byte(u.AuthString))
			if err != nil {
				return fmt.Errorf("account %s: caching_sha2_password hash: %w", u.Name, err)
			}
			if digest != "SHA256" {
				return fmt.Errorf("account %s: caching_sha2_password hash of digest %q: want SHA256", u.Name, digest)
			}
		}
	default:
		return fmt.Errorf("account %s: plugin %q: want mysql_native_password or caching_sha2_password", u.Name, u.Plugin)
	}
	return nil
}

// errAccounts is the answer to statements that change accounts.
func errAccounts() error {
	return mysql.NewSQLError(mysql.ERNotSupportedYet, "42000",
		"accounts are kept in the cluster file (sql_users in cluster.json), so every gateway admits the same ones: change them there and restart the gateways")
}
