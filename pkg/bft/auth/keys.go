package auth

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"filippo.io/edwards25519"
)

// PublicKeySize is the size of an encoded Ed25519 public key.
const PublicKeySize = ed25519.PublicKeySize

// pemType is the PEM block type of a PKCS#8 private key.
const pemType = "PRIVATE KEY"

// GenerateKey returns a new Ed25519 private key from crypto/rand.
func GenerateKey() (ed25519.PrivateKey, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("auth: generate key: %w", err)
	}
	return priv, nil
}

// PublicKeyOf returns the public half of priv (a copy).
func PublicKeyOf(priv ed25519.PrivateKey) ed25519.PublicKey {
	return bytes.Clone(priv[32:])
}

// EncodePublicKey returns the cluster-file form of a public key: standard
// base64 of its 32 raw bytes.
func EncodePublicKey(pub ed25519.PublicKey) string {
	return base64.StdEncoding.EncodeToString(pub)
}

// ParsePublicKey decodes the cluster-file form of a public key and checks it
// with CheckPublicKey. Errors wrap ErrMalformedKey.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %q is not standard base64: %w", ErrMalformedKey, s, err)
	}
	if err := CheckPublicKey(b); err != nil {
		return nil, err
	}
	return ed25519.PublicKey(b), nil
}

// CheckPublicKey reports whether pub is an Ed25519 public key this package
// accepts: 32 bytes, a point of the curve, canonically encoded, and not of
// small order. Errors wrap ErrMalformedKey.
func CheckPublicKey(pub []byte) error {
	_, err := decodePoint(pub)
	return err
}

// decodePoint decodes pub under the rules of CheckPublicKey.
func decodePoint(pub []byte) (*edwards25519.Point, error) {
	if len(pub) != PublicKeySize {
		return nil, fmt.Errorf("%w: public key has %d bytes, want %d", ErrMalformedKey, len(pub), PublicKeySize)
	}
	p, err := new(edwards25519.Point).SetBytes(pub)
	if err != nil {
		return nil, fmt.Errorf("%w: public key is not a point of edwards25519", ErrMalformedKey)
	}
	// SetBytes accepts non-canonical encodings (y >= p, or x = 0 with the
	// sign bit set); one key must have one encoding, since a client's
	// encoded key is its identity.
	if !bytes.Equal(p.Bytes(), pub) {
		return nil, fmt.Errorf("%w: public key is not canonically encoded", ErrMalformedKey)
	}
	// A small-order key makes X25519 output a constant (so the pairwise MAC
	// key would be public) and admits signatures valid for many messages.
	if new(edwards25519.Point).MultByCofactor(p).Equal(edwards25519.NewIdentityPoint()) == 1 {
		return nil, fmt.Errorf("%w: public key has small order", ErrMalformedKey)
	}
	return p, nil
}

// checkPrivateKey checks the length of priv and that its public half is the
// one its seed derives.
func checkPrivateKey(priv ed25519.PrivateKey) error {
	if len(priv) != ed25519.PrivateKeySize {
		return fmt.Errorf("%w: private key has %d bytes, want %d", ErrMalformedKey, len(priv), ed25519.PrivateKeySize)
	}
	derived := ed25519.NewKeyFromSeed(priv.Seed())
	if !bytes.Equal(derived[32:], priv[32:]) {
		return fmt.Errorf("%w: private key's public half does not match its seed", ErrMalformedKey)
	}
	return nil
}

// MarshalPrivateKey encodes priv as a PKCS#8 PEM block.
func MarshalPrivateKey(priv ed25519.PrivateKey) ([]byte, error) {
	if err := checkPrivateKey(priv); err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("auth: marshal private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemType, Bytes: der}), nil
}

// ParsePrivateKey decodes a PKCS#8 PEM block holding an Ed25519 private key.
// Anything but whitespace around the single block is an error.
func ParsePrivateKey(data []byte) (ed25519.PrivateKey, error) {
	block, rest := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%w: no PEM block found", ErrMalformedKey)
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, fmt.Errorf("%w: unexpected data after the PEM block", ErrMalformedKey)
	}
	if block.Type != pemType {
		return nil, fmt.Errorf("%w: PEM block is %q, want %q", ErrMalformedKey, block.Type, pemType)
	}
	if len(block.Headers) != 0 {
		return nil, fmt.Errorf("%w: PEM block has headers (encrypted keys are not supported)", ErrMalformedKey)
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformedKey, err)
	}
	priv, ok := key.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%w: PKCS#8 key is %T, want an Ed25519 key", ErrMalformedKey, key)
	}
	if err := checkPrivateKey(priv); err != nil {
		return nil, err
	}
	if err := CheckPublicKey(priv.Public().(ed25519.PublicKey)); err != nil {
		return nil, err
	}
	return priv, nil
}

// WritePrivateKeyFile writes priv to path as PKCS#8 PEM with mode 0600. It
// never replaces an existing file (the error wraps fs.ErrExist): a key that
// is overwritten is lost. The file appears complete or not at all: it is
// written to a temporary file, synced, linked into place and the directory
// synced.
func WritePrivateKeyFile(path string, priv ed25519.PrivateKey) (err error) {
	data, err := MarshalPrivateKey(priv)
	if err != nil {
		return fmt.Errorf("auth: write private key %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("auth: write private key %s: %w", path, err)
	}
	tmpName := tmp.Name()
	defer func() {
		_ = os.Remove(tmpName)
	}()
	// CreateTemp uses 0600 already; Chmod makes it explicit and independent
	// of the platform.
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("auth: write private key %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("auth: write private key %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("auth: write private key %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("auth: write private key %s: %w", path, err)
	}
	// Link fails if path exists, so an existing key is never replaced.
	if err := os.Link(tmpName, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("auth: write private key %s: refusing to overwrite an existing key file: %w", path, fs.ErrExist)
		}
		return fmt.Errorf("auth: write private key %s: %w", path, err)
	}
	if err := os.Remove(tmpName); err != nil {
		return fmt.Errorf("auth: write private key %s: %w", path, err)
	}
	if err := SyncDir(dir); err != nil {
		return fmt.Errorf("auth: write private key %s: %w", path, err)
	}
	return nil
}

// LoadPrivateKeyFile reads an Ed25519 private key written by
// WritePrivateKeyFile. It refuses (ErrInsecureKeyFile) a file that is not a
// regular file or whose mode grants any access to group or others, as ssh
// does: a key that others could read may already be known to them.
func LoadPrivateKeyFile(path string) (ed25519.PrivateKey, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("auth: load private key: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("auth: load private key %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrInsecureKeyFile, path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		return nil, fmt.Errorf("%w: %s has mode %#o, accessible by group or others; run chmod 600 %s", ErrInsecureKeyFile, path, perm, path)
	}
	const maxKeyFile = 64 << 10
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("auth: load private key %s: %w", path, err)
	}
	if len(data) > maxKeyFile {
		return nil, fmt.Errorf("auth: load private key %s: %w: larger than %d bytes", path, ErrMalformedKey, maxKeyFile)
	}
	priv, err := ParsePrivateKey(data)
	if err != nil {
		return nil, fmt.Errorf("auth: load private key %s: %w", path, err)
	}
	return priv, nil
}

// SyncDir fsyncs a directory, so that entries created or renamed in it
// survive a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync dir: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}
