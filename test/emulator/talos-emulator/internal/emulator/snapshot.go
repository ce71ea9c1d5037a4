package emulator

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// etcd's backend layout (go.etcd.io/etcd/server/v3/storage/schema): the "key" bucket maps a
// revision (8 bytes main, '_', 8 bytes sub) to a marshalled mvccpb.KeyValue. A snapshot is that
// bbolt file with the SHA-256 of its contents appended; talosctl checks the hash's presence
// (size % 512 == 32) and etcdutl's snapshot status reads the bucket.
const (
	keyBucket   = "key"
	metaBucket  = "meta"
	revBytesLen = 8 + 1 + 8
)

func revisionKey(main int64) []byte {
	b := make([]byte, revBytesLen)
	binary.BigEndian.PutUint64(b[0:8], uint64(main))
	b[8] = '_'
	binary.BigEndian.PutUint64(b[9:], 0)

	return b
}

// encodeSnapshot writes the store as an etcd snapshot: a bbolt database plus its SHA-256.
func encodeSnapshot(store etcdStore) ([]byte, error) {
	dir, err := os.MkdirTemp("", "talos-emulator-snapshot-")
	if err != nil {
		return nil, err
	}

	defer os.RemoveAll(dir) //nolint:errcheck

	path := filepath.Join(dir, "db")

	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, err
	}

	keys := make([]string, 0, len(store.keys))
	for k := range store.keys {
		keys = append(keys, k)
	}

	sort.Strings(keys)

	// the last entry carries the store's revision, which is what `snapshot status` reports
	first := max(store.revision-int64(len(keys))+1, 1)

	err = db.Update(func(tx *bolt.Tx) error {
		bucket, err := tx.CreateBucketIfNotExists([]byte(keyBucket))
		if err != nil {
			return err
		}

		if _, err = tx.CreateBucketIfNotExists([]byte(metaBucket)); err != nil {
			return err
		}

		for i, k := range keys {
			rev := first + int64(i)
			kv := mvccpb.KeyValue{Key: []byte(k), Value: []byte(store.keys[k]), CreateRevision: rev, ModRevision: rev, Version: 1}

			value, err := kv.Marshal()
			if err != nil {
				return err
			}

			if err = bucket.Put(revisionKey(rev), value); err != nil {
				return err
			}
		}

		return nil
	})
	if closeErr := db.Close(); err == nil {
		err = closeErr
	}

	if err != nil {
		return nil, err
	}

	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}

	sum := sha256.Sum256(data)

	return append(data, sum[:]...), nil
}

// decodeSnapshot reads an etcd snapshot back into a store, checking the appended SHA-256 unless
// told not to (talosctl bootstrap --recover-skip-hash-check, for copies of the data directory).
func decodeSnapshot(snapshot []byte, skipHashCheck bool) (etcdStore, error) {
	data := snapshot

	if len(snapshot)%512 == sha256.Size {
		data = snapshot[:len(snapshot)-sha256.Size]
		sum := sha256.Sum256(data)

		if !skipHashCheck && !bytes.Equal(sum[:], snapshot[len(data):]) {
			return etcdStore{}, errors.New("snapshot file integrity check failed: sha256 mismatch")
		}
	} else if !skipHashCheck {
		return etcdStore{}, errors.New("snapshot missing hash but --recover-skip-hash-check was not set")
	}

	dir, err := os.MkdirTemp("", "talos-emulator-recover-")
	if err != nil {
		return etcdStore{}, err
	}

	defer os.RemoveAll(dir) //nolint:errcheck

	path := filepath.Join(dir, "db")
	if err = os.WriteFile(path, data, 0o600); err != nil {
		return etcdStore{}, err
	}

	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return etcdStore{}, fmt.Errorf("snapshot is not an etcd database: %w", err)
	}

	defer db.Close() //nolint:errcheck

	store := newEtcdStore()

	err = db.View(func(tx *bolt.Tx) error {
		bucket := tx.Bucket([]byte(keyBucket))
		if bucket == nil {
			return errors.New("snapshot has no key bucket")
		}

		return bucket.ForEach(func(k, v []byte) error {
			if len(k) < 8 {
				return fmt.Errorf("bad revision key %x", k)
			}

			var kv mvccpb.KeyValue
			if err := kv.Unmarshal(v); err != nil {
				return err
			}

			store.keys[string(kv.Key)] = string(kv.Value)
			store.revision = max(store.revision, int64(binary.BigEndian.Uint64(k[:8])))

			return nil
		})
	})

	return store, err
}
