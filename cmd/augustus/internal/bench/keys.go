package bench

import (
	"crypto/ed25519"
	"errors"
	"fmt"

	"github.com/augustus-db/augustus/pkg/bft/auth"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
)

// loadClientKey loads the client key (--client-key, default the first
// client of cluster.json) and checks the cluster will accept it.
func loadClientKey(c *cluster.Cluster, o *Options) (ed25519.PrivateKey, error) {
	path := o.clientKey
	if path == "" {
		if len(c.Clients) == 0 {
			return nil, errors.New("cluster.json lists no client: pass --client-key")
		}
		path = cluster.KeyPath(o.dir, c.Clients[0].Name)
	}
	key, err := auth.LoadPrivateKeyFile(path)
	if err != nil {
		return nil, fmt.Errorf("client key: %w", err)
	}
	if c.ClientPolicy == cluster.PolicyListed {
		pub := auth.EncodePublicKey(auth.PublicKeyOf(key))
		listed := false
		for _, cl := range c.Clients {
			listed = listed || cl.PublicKey == pub
		}
		if !listed {
			return nil, fmt.Errorf("the key in %s is not one of the clients in cluster.json, and the client policy is %q: the replicas would ignore its calls",
				path, cluster.PolicyListed)
		}
	}
	return key, nil
}
