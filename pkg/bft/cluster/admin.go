package cluster

import (
	"crypto/ed25519"
	"fmt"
	"path/filepath"

	"github.com/augustus-db/augustus/pkg/bft/auth"
)

// Admin is a holder of an admin key: only transactions signed by an admin
// key listed here may write the metadata keyspace (the partition map and the
// schema catalog, txn.md M5). Its private key lives in keys/<name>.key like
// the others; it is not a client key (an admin tool signs its envelopes with
// a client key and the metadata transaction with the admin key).
type Admin struct {
	// Name names the key file, keys/<name>.key.
	Name string `json:"name"`
	// PublicKey is the admin's Ed25519 public key, standard base64.
	PublicKey string `json:"public_key"`
}

// AdminName returns the name Generate gives admin i.
func AdminName(i int) string { return fmt.Sprintf("admin%d", i) }

// admins checks the admin entries: names and keys share the cluster-wide
// namespaces of replicas and clients (they name files in one directory, and
// a key must not serve two roles).
func (v *validator) admins(c *Cluster) {
	for i := range c.Admins {
		a := &c.Admins[i]
		where := fmt.Sprintf("admin %q", a.Name)
		if a.Name == "" {
			where = fmt.Sprintf("admins[%d]", i)
		}
		v.name(where, a.Name)
		v.key(where, a.PublicKey)
	}
}

// Admin returns the admin called name.
func (c *Cluster) Admin(name string) (*Admin, error) {
	for i := range c.Admins {
		if c.Admins[i].Name == name {
			return &c.Admins[i], nil
		}
	}
	return nil, fmt.Errorf("%w: no admin %q in the cluster", ErrNotFound, name)
}

// AdminKeys returns the admin public keys, in file order.
func (c *Cluster) AdminKeys() ([]ed25519.PublicKey, error) {
	keys := make([]ed25519.PublicKey, len(c.Admins))
	for i, a := range c.Admins {
		var err error
		if keys[i], err = auth.ParsePublicKey(a.PublicKey); err != nil {
			return nil, fmt.Errorf("cluster: admin %s: %w", a.Name, err)
		}
	}
	return keys, nil
}

// LoadAdminKeyFile loads a private key file and checks that it is the key
// pair of admin name.
func (c *Cluster) LoadAdminKeyFile(name, path string) (ed25519.PrivateKey, error) {
	a, err := c.Admin(name)
	if err != nil {
		return nil, err
	}
	return loadMatching(path, "admin", name, a.PublicKey)
}

// LoadAdminKey is LoadReplicaKey for an admin.
func LoadAdminKey(dir, name string) (ed25519.PrivateKey, error) {
	c, err := Load(filepath.Join(dir, FileName))
	if err != nil {
		return nil, err
	}
	return c.LoadAdminKeyFile(name, KeyPath(dir, name))
}

// addAdmins generates n admin key pairs into c (Generate's part).
func addAdmins(c *Cluster, n int) ([]namedKey, error) {
	var keys []namedKey
	for i := range n {
		priv, err := auth.GenerateKey()
		if err != nil {
			return nil, err
		}
		name := AdminName(i)
		keys = append(keys, namedKey{name, priv})
		c.Admins = append(c.Admins, Admin{Name: name, PublicKey: auth.EncodePublicKey(auth.PublicKeyOf(priv))})
	}
	return keys, nil
}
