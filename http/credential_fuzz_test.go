package http_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
)

func basic(s string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(s)) }

func TestParseCredential(t *testing.T) {
	key := "rak_ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	tests := []struct {
		name          string
		apiKey, authz []string
		want          resourceapi.Credential
		code          resourceapi.Code
	}{
		{name: "none"},
		{name: "empty headers", apiKey: []string{""}, authz: []string{"  "}},
		{name: "api key", apiKey: []string{key}, want: resourceapi.Credential{Scheme: resourceapi.SchemeAPIKey, Secret: key}},
		{name: "api key trimmed", apiKey: []string{" " + key + " "}, want: resourceapi.Credential{Scheme: resourceapi.SchemeAPIKey, Secret: key}},
		{name: "bearer", authz: []string{"Bearer a.b.c"}, want: resourceapi.Credential{Scheme: resourceapi.SchemeBearer, Secret: "a.b.c"}},
		{name: "bearer any case", authz: []string{"bEaReR a.b.c"}, want: resourceapi.Credential{Scheme: resourceapi.SchemeBearer, Secret: "a.b.c"}},
		{name: "basic", authz: []string{basic("ann@example.com:pa:ss")},
			want: resourceapi.Credential{Scheme: resourceapi.SchemeBasic, Email: "ann@example.com", Password: "pa:ss"}},
		{name: "basic unpadded", authz: []string{"Basic " + base64.RawStdEncoding.EncodeToString([]byte("a@b.c:x"))},
			want: resourceapi.Credential{Scheme: resourceapi.SchemeBasic, Email: "a@b.c", Password: "x"}},
		{name: "basic empty password", authz: []string{basic("a@b.c:")},
			want: resourceapi.Credential{Scheme: resourceapi.SchemeBasic, Email: "a@b.c"}},
		{name: "two schemes", apiKey: []string{key}, authz: []string{"Bearer x"}, code: resourceapi.CodeBadRequest},
		{name: "two keys", apiKey: []string{key, key}, code: resourceapi.CodeBadRequest},
		{name: "two authorizations", authz: []string{"Bearer x", "Bearer y"}, code: resourceapi.CodeBadRequest},
		{name: "bearer without token", authz: []string{"Bearer"}, code: resourceapi.CodeInvalidToken},
		{name: "bearer blank token", authz: []string{"Bearer    "}, code: resourceapi.CodeInvalidToken},
		{name: "unknown scheme", authz: []string{"Digest x"}, code: resourceapi.CodeInvalidToken},
		{name: "token without scheme", authz: []string{"a.b.c"}, code: resourceapi.CodeInvalidToken},
		{name: "basic not base64", authz: []string{"Basic !!!"}, code: resourceapi.CodeInvalidToken},
		{name: "basic without colon", authz: []string{basic("ann@example.com")}, code: resourceapi.CodeInvalidToken},
		{name: "basic without email", authz: []string{basic(":secret")}, code: resourceapi.CodeInvalidToken},
		{name: "basic not UTF-8", authz: []string{basic("a@b.c:\xff")}, code: resourceapi.CodeInvalidToken},
		{name: "huge", authz: []string{"Bearer " + strings.Repeat("a", 9000)}, code: resourceapi.CodeInvalidToken},
		{name: "huge key", apiKey: []string{strings.Repeat("a", 9000)}, code: resourceapi.CodeInvalidToken},
	}
	for _, tt := range tests {
		got, err := rhttp.ParseCredential(tt.apiKey, tt.authz)
		if code := resourceapi.ErrorCode(err); code != tt.code {
			t.Errorf("%s: error %v, want code %q", tt.name, err, tt.code)
			continue
		}
		if got != tt.want {
			t.Errorf("%s: credential %+v, want %+v", tt.name, got, tt.want)
		}
	}
	// Every invalid credential is told the same thing.
	_, e1 := rhttp.ParseCredential(nil, []string{"Digest x"})
	_, e2 := rhttp.ParseCredential(nil, []string{"Basic !!!"})
	if e1.Error() != e2.Error() || e1.Error() != resourceapi.ErrInvalidCredential().Error() {
		t.Errorf("invalid credentials told apart: %v / %v", e1, e2)
	}
}

// FuzzParseCredential feeds arbitrary header values to ParseCredential. It
// must never panic, and either fail with BAD_REQUEST or INVALID_TOKEN, or
// return a credential of exactly one scheme whose parts came from the input.
func FuzzParseCredential(f *testing.F) {
	for _, s := range []struct{ key, authz string }{
		{"", ""}, {"rak_ABCDEFGHIJKLMNOPQRSTUVWXYZ", ""}, {"", "Bearer a.b.c"}, {"", basic("a@b.c:pw")},
		{"x", "Bearer y"}, {"", "Basic"}, {"", "Basic ====="}, {"", "Bearer \x00"}, {"", "Basic " + base64.StdEncoding.EncodeToString([]byte{0xff, ':', 0xfe})},
		{"", "Negotiate abc"}, {"  ", "\t"},
	} {
		f.Add(s.key, s.authz)
	}
	f.Fuzz(func(t *testing.T, key, authz string) {
		var keys, authzs []string
		if key != "" {
			keys = []string{key}
		}
		if authz != "" {
			authzs = []string{authz}
		}
		cred, err := rhttp.ParseCredential(keys, authzs)
		if err != nil {
			switch resourceapi.ErrorCode(err) {
			case resourceapi.CodeBadRequest, resourceapi.CodeInvalidToken:
			default:
				t.Fatalf("error %v, want BAD_REQUEST or INVALID_TOKEN", err)
			}
			if strings.Contains(err.Error(), key) && key != "" && len(key) > 3 {
				t.Fatalf("error %q echoes the key", err)
			}
			return
		}
		switch cred.Scheme {
		case resourceapi.SchemeNone:
			if strings.TrimSpace(key) != "" || strings.TrimSpace(authz) != "" {
				t.Fatalf("no credential from %q, %q", key, authz)
			}
		case resourceapi.SchemeAPIKey:
			if cred.Secret != strings.TrimSpace(key) || cred.Email != "" {
				t.Fatalf("API key %+v from %q", cred, key)
			}
		case resourceapi.SchemeBearer:
			if cred.Secret == "" || !strings.Contains(authz, cred.Secret) {
				t.Fatalf("bearer %+v from %q", cred, authz)
			}
		case resourceapi.SchemeBasic:
			if cred.Email == "" || cred.Secret != "" {
				t.Fatalf("basic %+v from %q", cred, authz)
			}
		default:
			t.Fatalf("scheme %v", cred.Scheme)
		}
	})
}
