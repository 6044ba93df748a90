package http_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
)

// FuzzParseIdempotencyKey: any header value gives a key of 1 to
// MaxIdempotencyKeyLen printable ASCII characters, or BAD_REQUEST; never a
// panic or another error. A key given back, bare or quoted, is the same key.
func FuzzParseIdempotencyKey(f *testing.F) {
	for _, s := range []string{"abc", `"abc"`, `"a\"b\\c"`, "", `""`, " x ", "a\x00", `"a\`, `"a"b`, "caf\u00e9",
		strings.Repeat("k", resourceapi.MaxIdempotencyKeyLen+1)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		key, err := rhttp.ParseIdempotencyKey(http.Header{"Idempotency-Key": {v}})
		if err != nil {
			if resourceapi.ErrorCode(err) != resourceapi.CodeBadRequest {
				t.Fatalf("%q: %v, want BAD_REQUEST", v, err)
			}
			return
		}
		if key == "" || len(key) > resourceapi.MaxIdempotencyKeyLen {
			t.Fatalf("%q: key %q of length %d", v, key, len(key))
		}
		for i := 0; i < len(key); i++ {
			if key[i] < 0x20 || key[i] > 0x7e {
				t.Fatalf("%q: key %q holds byte %#x", v, key, key[i])
			}
		}
		quoted := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`
		if again, err := rhttp.ParseIdempotencyKey(http.Header{"Idempotency-Key": {quoted}}); err != nil || again != key {
			t.Fatalf("%q: key %q quoted as %q gives %q, %v", v, key, quoted, again, err)
		}
	})
}
