package http_test

import (
	"errors"
	stdmaps "maps"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
)

// FuzzDecodeRecord feeds arbitrary bodies to DecodeRecord and then Validate,
// as a REST write does (the handler decodes, the rule layer validates). It
// must never panic; it either fails with a BAD_REQUEST or
// VALIDATION_ERROR *Error (one detail per bad field), or returns a record
// that holds only writable fields of the right Go types and validates again
// unchanged.
func FuzzDecodeRecord(f *testing.F) {
	seeds := []string{
		`{"name":"Ann","email":"ann@example.com","age":30,"password":"correct horse","roles":["admin"],"deleted":false}`,
		`{"name":"  Ann  ","email":"ann@example.com","age":30.0}`,
		`{"id":7,"created_at":"x","name":"A","email":"a@b.c"}`,
		`{"name":null,"email":1,"age":"x","roles":"admin","deleted":"yes","nope":1}`,
		`{"age":1e2}`, `{"age":1.5}`, `{"age":99999999999999999999}`, `{"roles":null}`, `{"roles":["x","x"]}`,
		`{"name":"A","name":"B"}`, `{}`, `[]`, `null`, `"x"`, `{`, `{"a":1} {}`, ``, "\xff", `{"name":"\ud800"}`, `{"":1}`,
		"{\"name\":\"a\xffb\",\"email\":\"a@b.c\"}", `{"roles":["\udc00"]}`, `{"name":"\ud83d\ude00","email":"a@b.c"}`,
	}
	for i, s := range seeds {
		f.Add([]byte(s), uint8(i), int64(i%3))
	}
	f.Fuzz(func(t *testing.T, body []byte, m uint8, pathID int64) {
		mode := resourceapi.WriteMode(m%3) + resourceapi.ModeCreate
		if mode != resourceapi.ModeReplace {
			pathID = 0
		}
		rec, err := rhttp.DecodeRecord(resourceapi.Users, body, pathID)
		if err == nil {
			err = resourceapi.Validate(resourceapi.Users, rec, mode)
		}
		if err != nil {
			var e *resourceapi.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T) is not a *resourceapi.Error", err, err)
			}
			switch e.Code {
			case resourceapi.CodeBadRequest:
				if len(e.Details) != 0 {
					t.Fatalf("BAD_REQUEST with details %v", e.Details)
				}
			case resourceapi.CodeValidation:
				if len(e.Details) == 0 {
					t.Fatal("VALIDATION_ERROR without details")
				}
				seen := map[string]bool{}
				for _, d := range e.Details {
					// Field may be "": a body can have a key "" and be told
					// it is not a field.
					if d.Message == "" || seen[d.Field] {
						t.Fatalf("bad or repeated detail %+v in %v", d, e.Details)
					}
					seen[d.Field] = true
				}
			default:
				t.Fatalf("code %s, want BAD_REQUEST or VALIDATION_ERROR", e.Code)
			}
			if e.Message == "" {
				t.Fatal("error without a message")
			}
			return
		}
		if !utf8.Valid(body) {
			t.Fatalf("a body that is not UTF-8 was accepted: %q", body)
		}
		for name, v := range rec {
			f := resourceapi.Users.Field(name)
			if f == nil || f.ReadOnly {
				t.Fatalf("decoded record holds %q, which is not a writable field", name)
			}
			if v == nil {
				if !f.Nullable && mode != resourceapi.ModeReplace {
					t.Fatalf("%s is null but not nullable", name)
				}
				continue
			}
			var ok bool
			switch f.Type {
			case resourceapi.TypeInt:
				_, ok = v.(int64)
			case resourceapi.TypeString:
				_, ok = v.(string)
			case resourceapi.TypeBool:
				_, ok = v.(bool)
			case resourceapi.TypeTime:
				_, ok = v.(time.Time)
			case resourceapi.TypeStrings:
				_, ok = v.([]string)
			}
			if !ok {
				t.Fatalf("%s = %#v, not a %s", name, v, f.Type)
			}
		}
		again := stdmaps.Clone(rec)
		if err := resourceapi.Validate(resourceapi.Users, again, mode); err != nil {
			t.Fatalf("decoded record %v does not validate again: %v", rec, err)
		}
		if len(again) != len(rec) {
			t.Fatalf("validating again changed %v into %v", rec, again)
		}
	})
}
