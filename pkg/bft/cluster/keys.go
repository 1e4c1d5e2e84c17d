package cluster

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"path/filepath"

	"github.com/augustus-db/augustus/pkg/bft/auth"
)

// LoadReplicaKey loads the private key of replica name from a cluster
// directory laid out by Generate (<dir>/cluster.json, <dir>/keys/<name>.key)
// and checks that it is the key pair cluster.json lists for that replica.
func LoadReplicaKey(dir, name string) (ed25519.PrivateKey, error) {
	c, err := Load(filepath.Join(dir, FileName))
	if err != nil {
		return nil, err
	}
	return c.LoadReplicaKeyFile(name, KeyPath(dir, name))
}

// LoadClientKey is LoadReplicaKey for a client.
func LoadClientKey(dir, name string) (ed25519.PrivateKey, error) {
	c, err := Load(filepath.Join(dir, FileName))
	if err != nil {
		return nil, err
	}
	return c.LoadClientKeyFile(name, KeyPath(dir, name))
}

// LoadReplicaKeyFile loads a private key file from any path (a deployment
// may mount it anywhere) and checks that it is the key pair of replica name.
func (c *Cluster) LoadReplicaKeyFile(name, path string) (ed25519.PrivateKey, error) {
	_, r, err := c.Replica(name)
	if err != nil {
		return nil, err
	}
	return loadMatching(path, "replica", name, r.PublicKey)
}

// LoadClientKeyFile loads a private key file and checks that it is the key
// pair of client name.
func (c *Cluster) LoadClientKeyFile(name, path string) (ed25519.PrivateKey, error) {
	cl, err := c.Client(name)
	if err != nil {
		return nil, err
	}
	return loadMatching(path, "client", name, cl.PublicKey)
}

func loadMatching(path, kind, name, encodedPub string) (ed25519.PrivateKey, error) {
	want, err := auth.ParsePublicKey(encodedPub)
	if err != nil {
		return nil, fmt.Errorf("cluster: %s %s: %w", kind, name, err)
	}
	priv, err := auth.LoadPrivateKeyFile(path)
	if err != nil {
		return nil, fmt.Errorf("cluster: key of %s %s: %w", kind, name, err)
	}
	if !bytes.Equal(auth.PublicKeyOf(priv), want) {
		return nil, fmt.Errorf("%w: key file %s does not match the public key of %s in %s", ErrKeyMismatch, path, name, FileName)
	}
	return priv, nil
}
