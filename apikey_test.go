package resourceapi_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/resourceapi/resourceapi"
)

// TestHashTokenBytes: the hash an API key is looked up by is its SHA-256,
// whose hex (Hex) is HashToken's, as stored when the key was created.
func TestHashTokenBytes(t *testing.T) {
	for _, secret := range []string{"", "rak_TESTKEY", "rak_" + string(make([]byte, 300))} {
		sum := sha256.Sum256([]byte(secret))
		want := hex.EncodeToString(sum[:])
		h := resourceapi.HashTokenBytes(secret)
		if h != sum {
			t.Errorf("HashTokenBytes(%q) = %x, want %x", secret, h, sum)
		}
		x := h.Hex()
		if got := string(x[:]); got != want {
			t.Errorf("HashTokenBytes(%q) = %s, want %s", secret, got, want)
		}
		if got := resourceapi.HashToken(secret); got != want {
			t.Errorf("HashToken(%q) = %s, want %s", secret, got, want)
		}
	}
}
