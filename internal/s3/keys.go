package s3

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"syscall"

	"tessera/internal/meta"
)

// Access keys are kept in the meta store as trusted xattrs of the root
// directory, one per key: KeyXattrPrefix + the access key id, whose value
// is the Key as JSON. trusted.* attributes are root's (vfs hides them from
// everyone else, a mount's kernel asks for CAP_SYS_ADMIN) and outside
// every confined identity's view. SigV4 needs the secret itself, so it
// is kept as is.
const KeyXattrPrefix = "trusted.tessera.s3key."

// Roles of a key.
const (
	RoleRW = "rw"
	RoleRO = "ro"
)

// maxKeyRecord bounds a key record read back from the meta store.
const maxKeyRecord = 4096

// Key is an access key and the Tessera identity it maps to.
type Key struct {
	AccessKeyID string `json:"access_key_id"`
	Secret      string `json:"secret_access_key"`
	Name        string `json:"name"`
	Role        string `json:"role"`
	// Root confines the key to a subtree ("" or "/": the whole namespace,
	// or the server's --root): its buckets are the directories under it.
	Root     string `json:"root,omitempty"`
	Uid      uint32 `json:"uid"`
	Gid      uint32 `json:"gid"`
	Created  int64  `json:"created"` // unix seconds
	ReadOnly bool   `json:"-"`
}

// NewKeyRequest is what `tessera s3 keys add` asks for.
type NewKeyRequest struct {
	Name     string
	Role     string
	Root     string
	Uid, Gid uint32
	Now      int64
}

// checkKeyName refuses names that are empty, long or hold control
// characters.
func checkKeyName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("key name %q: want 1 to 64 characters", name)
	}
	for _, r := range name {
		if r < 0x21 || r == 0x7f {
			return fmt.Errorf("key name %q: no spaces or control characters", name)
		}
	}
	return nil
}

// NewKey makes a key for req: a 20-character access key id ("TK" and
// base32) and a 40-character secret, both random.
func NewKey(req NewKeyRequest) (Key, error) {
	if err := checkKeyName(req.Name); err != nil {
		return Key{}, err
	}
	if req.Role != RoleRW && req.Role != RoleRO {
		return Key{}, fmt.Errorf("role %q: want rw or ro", req.Role)
	}
	root := req.Root
	if root == "" {
		root = "/"
	}
	if !strings.HasPrefix(root, "/") || path.Clean(root) != root || len(root) > 1024 {
		return Key{}, fmt.Errorf("root %q: want a clean absolute path such as /proj", req.Root)
	}
	var id [11]byte
	var sec [30]byte
	if _, err := rand.Read(id[:]); err != nil {
		return Key{}, err
	}
	if _, err := rand.Read(sec[:]); err != nil {
		return Key{}, err
	}
	akid := "TK" + base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(id[:])[:18]
	secret := base64.RawURLEncoding.EncodeToString(sec[:])
	return Key{AccessKeyID: akid, Secret: secret, Name: req.Name, Role: req.Role, Root: root, Uid: req.Uid, Gid: req.Gid, Created: req.Now}, nil
}

// validAccessKeyID reports whether id may name a key: 16 to 128
// letters and digits.
func validAccessKeyID(id string) bool {
	if len(id) < 16 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func decodeKey(id string, b []byte) (Key, error) {
	if len(b) > maxKeyRecord {
		return Key{}, fmt.Errorf("s3 key %s: a record of %d bytes (at most %d)", id, len(b), maxKeyRecord)
	}
	var k Key
	if err := json.Unmarshal(b, &k); err != nil {
		return Key{}, fmt.Errorf("s3 key %s: a malformed record: %v", id, err)
	}
	if k.AccessKeyID != id || k.Secret == "" || (k.Role != RoleRW && k.Role != RoleRO) {
		return Key{}, fmt.Errorf("s3 key %s: a malformed record", id)
	}
	if k.Root == "" {
		k.Root = "/"
	}
	if !strings.HasPrefix(k.Root, "/") || path.Clean(k.Root) != k.Root {
		return Key{}, fmt.Errorf("s3 key %s: a malformed root", id)
	}
	k.ReadOnly = k.Role == RoleRO
	return k, nil
}

// AddKey stores k in the meta store; a name already used by a key is
// refused (names are how operators remove keys).
func AddKey(ctx context.Context, api meta.API, k Key) error {
	keys, err := ListKeys(ctx, api)
	if err != nil {
		return err
	}
	for _, o := range keys {
		if o.Name == k.Name {
			return fmt.Errorf("an s3 key named %q exists already (access key id %s): remove it first", k.Name, o.AccessKeyID)
		}
	}
	b, err := json.Marshal(k)
	if err != nil {
		return err
	}
	const xattrCreate = 1
	if err := api.SetXattr(ctx, meta.RootIno, KeyXattrPrefix+k.AccessKeyID, b, xattrCreate); err != nil {
		return fmt.Errorf("storing s3 key %s: %w", k.Name, err)
	}
	return nil
}

// GetKey returns the key with access key id id (an error wrapping
// syscall.ENODATA if there is none).
func GetKey(ctx context.Context, api meta.API, id string) (Key, error) {
	if !validAccessKeyID(id) {
		return Key{}, fmt.Errorf("an access key id of %d bytes that is not 16 to 128 letters and digits: %w", len(id), syscall.ENODATA)
	}
	b, err := api.GetXattr(ctx, meta.RootIno, KeyXattrPrefix+id)
	if err != nil {
		return Key{}, err
	}
	return decodeKey(id, b)
}

// ListKeys returns every key, by name.
func ListKeys(ctx context.Context, api meta.API) ([]Key, error) {
	names, err := api.ListXattr(ctx, meta.RootIno)
	if err != nil {
		return nil, fmt.Errorf("listing s3 keys: %w", err)
	}
	var out []Key
	for _, n := range names {
		id, ok := strings.CutPrefix(n, KeyXattrPrefix)
		if !ok {
			continue
		}
		k, err := GetKey(ctx, api, id)
		if errors.Is(err, syscall.ENODATA) || errors.Is(err, meta.ErrNotFound) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b Key) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// RemoveKey removes the key named nameOrID (its name or its access key
// id) and returns it.
func RemoveKey(ctx context.Context, api meta.API, nameOrID string) (Key, error) {
	keys, err := ListKeys(ctx, api)
	if err != nil {
		return Key{}, err
	}
	for _, k := range keys {
		if k.Name == nameOrID || k.AccessKeyID == nameOrID {
			if err := api.RemoveXattr(ctx, meta.RootIno, KeyXattrPrefix+k.AccessKeyID); err != nil {
				return Key{}, fmt.Errorf("removing s3 key %s: %w", k.Name, err)
			}
			return k, nil
		}
	}
	return Key{}, fmt.Errorf("no s3 key is named %q (tessera s3 keys list shows them)", nameOrID)
}
