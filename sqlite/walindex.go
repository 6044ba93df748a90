package sqlite

import (
	"encoding/binary"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// walIndex is the start of a WAL database's <file>-shm, mapped read-only: the
// two copies of the WAL-index header, which every commit rewrites (see
// https://www.sqlite.org/walformat.html). openWALIndex maps it where the
// platform allows. The mapping lives as long as the walIndex: it is unmapped
// once the walIndex is unreachable (a cleanup registered by openWALIndex),
// never while a read holds it.
type walIndex struct{ mem []byte }

// walHeader is one copy of the WAL-index header (WalIndexHdr in SQLite's
// wal.c): 48 bytes, as twelve words in the machine's byte order. Every
// commit increments iChange (word 2, "incremented with each transaction" in
// the format's documentation) and rewrites the header.
type walHeader [12]uint32

const walHeaderSize = int(unsafe.Sizeof(walHeader{}))

// walChange is the word of iChange in a walHeader.
const walChange = 2

// read reads the header into h, and reports whether it is consistent: SQLite
// writes the second copy and then the first, so reading the first and then
// the second, and finding them equal, means no write was half done. The
// loads are atomic so that neither the compiler nor the processor reorders
// them.
func (x *walIndex) read(h *walHeader) bool {
	copies := (*[2]walHeader)(unsafe.Pointer(&x.mem[0]))
	var second walHeader
	for i := range h {
		h[i] = atomic.LoadUint32(&copies[0][i])
	}
	for i := range second {
		second[i] = atomic.LoadUint32(&copies[1][i])
	}
	// x holds the mapping: unmapped by a cleanup once x is unreachable,
	// so x must stay reachable until the last load.
	runtime.KeepAlive(x)
	return *h == second
}

// sane reports whether h looks like the header this code knows: version
// 3007000, initialised.
func (h *walHeader) sane() bool {
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], h[3]) // isInit is the first byte of word 3
	return h[0] == 3007000 && b[0] == 1
}
