package resourceapi

import (
	"context"
	"sync/atomic"
)

// Memo holds what a transport derives from a record that a store shares (its
// rendering), for as long as the store keeps that very record: a store that
// caches records keeps a Memo with each, and drops it with the record, so
// that whatever a write drops from the cache, or makes the cache stop
// answering with, takes what was derived from it along. What a Memo holds is
// therefore never older than the record it comes with.
//
// It holds one value at a time, under the key of what derived it (a view of
// the resource's fields): a value stored under another key replaces it. It
// is safe for concurrent use. The nil *Memo keeps nothing.
type Memo struct {
	v atomic.Pointer[memoValue]
}

type memoValue struct {
	key, val any
}

// Load returns the value stored under key, or nil.
func (m *Memo) Load(key any) any {
	if m == nil {
		return nil
	}
	if v := m.v.Load(); v != nil && v.key == key {
		return v.val
	}
	return nil
}

// Store keeps val under key, replacing what the Memo held. val must be
// derived only from the record the Memo came with, and by what key names.
func (m *Memo) Store(key, val any) {
	if m != nil {
		m.v.Store(&memoValue{key: key, val: val})
	}
}

// MemoStore is implemented by stores that share the records they return
// (a record cache): GetMemo is Store.Get, and returns beside a record the
// store shares the Memo that lives and dies with it in the store (nil when
// the record is not shared: read now, and not kept).
type MemoStore interface {
	GetMemo(ctx context.Context, res *Resource, id int64) (Record, *Memo, error)
}
