package cluster

import (
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/augustus-db/augustus/pkg/bft/auth"
)

// SQLUser is an account of the MySQL gateway (augustus gateway, the demo).
// The cluster file is where every gateway of the cluster reads its users
// from, so they all admit the same accounts; a gateway does not accept
// CREATE USER or password changes (they would live in one process only).
//
// Only a hash of the password is kept here, in the form MySQL itself stores
// in mysql.user.authentication_string, so an account can be copied from a
// MySQL server and a leaked cluster file does not reveal passwords.
type SQLUser struct {
	// Name is the MySQL user name (at most 32 characters, MySQL's limit).
	Name string `json:"name"`
	// Host is the client host the account admits: "%" (any, the default
	// when empty), "localhost" (loopback), or an exact host or address.
	Host string `json:"host,omitempty"`
	// Plugin is the authentication plugin: "mysql_native_password" (the
	// default when empty) or "caching_sha2_password" (whose full
	// authentication sends the password, so clients need TLS for it).
	Plugin string `json:"plugin,omitempty"`
	// AuthString is the password hash: empty for an account without a
	// password; for mysql_native_password "*" and 40 upper-case hex digits
	// (SHA1(SHA1(password)), NativePasswordHash); for caching_sha2_password
	// MySQL's "$A$005$..." string.
	AuthString string `json:"auth_string"`
}

// SQL authentication plugins (SQLUser.Plugin).
const (
	PluginNativePassword = "mysql_native_password"
	PluginCachingSHA2    = "caching_sha2_password"
)

// SQLRootName is the SQL account Generate creates.
const SQLRootName = "root"

// SQLRootPasswordFile is the file, inside the keys directory, where
// Generate writes the generated password of root (mode 0600).
const SQLRootPasswordFile = "sql-root.password"

// SQLRootMode says which SQL root account Generate creates
// (GenerateOptions.SQLRoot).
type SQLRootMode int

const (
	// SQLRootNone creates no SQL account (a cluster used without the
	// gateway; one can be added to cluster.json later).
	SQLRootNone SQLRootMode = iota
	// SQLRootGenerated creates root with a random password: its hash goes
	// to cluster.json, the password itself to keys/sql-root.password
	// (0600), written once, for the operator to read or move.
	SQLRootGenerated
	// SQLRootNoPassword creates root without a password: for the local
	// demo, whose gateway listens on loopback only.
	SQLRootNoPassword
)

// SQLRootPasswordPath returns where Generate wrote root's password in a
// cluster directory.
func SQLRootPasswordPath(dir string) string {
	return filepath.Join(dir, KeysDir, SQLRootPasswordFile)
}

// NativePasswordHash returns the mysql_native_password authentication
// string of a password: "*" and the upper-case hex of SHA1(SHA1(password)),
// as MySQL's PASSWORD() did. The empty password has the empty string (no
// password).
func NativePasswordHash(password string) string {
	if password == "" {
		return ""
	}
	s1 := sha1.Sum([]byte(password))
	s2 := sha1.Sum(s1[:])
	return "*" + strings.ToUpper(hex.EncodeToString(s2[:]))
}

// passwordAlphabet avoids characters a shell or a MySQL option file would
// treat specially, so the password can be pasted into -p... as it is.
const passwordAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789"

// GeneratePassword returns a random password of 24 characters (about 140
// bits).
func GeneratePassword() (string, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("cluster: generate a password: %w", err)
	}
	out := make([]byte, len(b))
	for i, x := range b {
		// 256 % 57 != 0 leaves a bias of under 1/57 per character: harmless
		// for a password of this length.
		out[i] = passwordAlphabet[int(x)%len(passwordAlphabet)]
	}
	return string(out), nil
}

var (
	nativeHashPattern = regexp.MustCompile(`^\*[0-9A-F]{40}$`)
	sqlUserPattern    = regexp.MustCompile(`^[A-Za-z0-9_.@-]{1,32}$`)
)

// sqlUsers checks the SQL accounts: names MySQL accepts, one account per
// (name, host), known plugins and well-formed hashes.
func (v *validator) sqlUsers(c *Cluster) {
	seen := map[string]string{}
	for i := range c.SQLUsers {
		u := &c.SQLUsers[i]
		where := fmt.Sprintf("sql user %q", u.Name)
		if u.Name == "" {
			where = fmt.Sprintf("sql_users[%d]", i)
		}
		if !sqlUserPattern.MatchString(u.Name) {
			v.add(ErrBadName, "%s: name %q must be 1 to 32 of A-Z a-z 0-9 _ . @ -", where, u.Name)
		}
		host := u.EffectiveHost()
		if strings.ContainsAny(host, " \t\n'\"`") || len(host) > 255 {
			v.add(ErrBadParameter, "%s: host %q: want %%, localhost, or a host name or address", where, u.Host)
		}
		id := u.Name + "@" + host
		if prev, dup := seen[id]; dup {
			v.add(ErrDuplicate, "%s: account %s is also %s", where, id, prev)
		}
		seen[id] = where
		switch u.EffectivePlugin() {
		case PluginNativePassword:
			if u.AuthString != "" && !nativeHashPattern.MatchString(u.AuthString) {
				v.add(ErrBadParameter, "%s: auth_string of %s must be empty (no password) or \"*\" and 40 upper-case hex digits (SHA1(SHA1(password)), as MySQL stores it)", where, PluginNativePassword)
			}
		case PluginCachingSHA2:
			// The gateway parses the whole string at start; here only its
			// shape, so a hash pasted into the wrong plugin is caught.
			if u.AuthString != "" && !strings.HasPrefix(u.AuthString, "$A$") {
				v.add(ErrBadParameter, "%s: auth_string of %s must be empty or MySQL's \"$A$...\" string", where, PluginCachingSHA2)
			}
		default:
			v.add(ErrBadParameter, "%s: plugin %q: want %q or %q", where, u.Plugin, PluginNativePassword, PluginCachingSHA2)
		}
	}
}

// EffectiveHost is the account's host, "%" when empty.
func (u SQLUser) EffectiveHost() string {
	if u.Host == "" {
		return "%"
	}
	return u.Host
}

// EffectivePlugin is the account's plugin, mysql_native_password when empty.
func (u SQLUser) EffectivePlugin() string {
	if u.Plugin == "" {
		return PluginNativePassword
	}
	return u.Plugin
}

// sqlRoot makes the SQL root account a new cluster gets, and its password
// (empty unless generated).
func sqlRoot(mode SQLRootMode) (*SQLUser, string, error) {
	switch mode {
	case SQLRootNone:
		return nil, "", nil
	case SQLRootNoPassword:
		return &SQLUser{Name: SQLRootName, Host: "%", Plugin: PluginNativePassword}, "", nil
	case SQLRootGenerated:
		pw, err := GeneratePassword()
		if err != nil {
			return nil, "", err
		}
		return &SQLUser{Name: SQLRootName, Host: "%", Plugin: PluginNativePassword, AuthString: NativePasswordHash(pw)}, pw, nil
	}
	return nil, "", fmt.Errorf("%w: SQL root mode %d", ErrBadParameter, mode)
}

// writePasswordFile writes a password to a new file of mode 0600, synced,
// and never over an existing file (the password is shown once; an old one
// must not be lost silently).
func writePasswordFile(path, password string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s exists; refusing to overwrite it: %w", path, err)
		}
		return err
	}
	if _, err := f.WriteString(password + "\n"); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return auth.SyncDir(filepath.Dir(path))
}

// ReadSQLRootPassword reads the password Generate wrote for root in dir
// (without its newline).
func ReadSQLRootPassword(dir string) (string, error) {
	data, err := os.ReadFile(SQLRootPasswordPath(dir))
	if err != nil {
		return "", fmt.Errorf("cluster: %w", err)
	}
	return strings.TrimRight(string(data), "\r\n"), nil
}
