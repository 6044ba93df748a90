package http

import (
	"encoding/base64"
	"strings"
	"unicode/utf8"

	"github.com/resourceapi/resourceapi"
)

// maxCredentialLen bounds a credential header value: no key or token of
// this service comes near it, and nothing longer is worth decoding.
const maxCredentialLen = 8 << 10

var (
	errTwoCredentials = resourceapi.Errorf(resourceapi.CodeBadRequest,
		"The request carries more than one credential; send one of X-API-Key, Authorization: Bearer or Authorization: Basic")
	// errInvalidCredential is the one answer to every credential that is
	// present but not valid, whatever part of it failed.
	errInvalidCredential = resourceapi.ErrInvalidCredential()
)

// ParseCredential reads the credential of a request from the values of its
// X-API-Key and Authorization headers (or of the same names in a WebSocket
// connection_init payload). None gives SchemeNone; two credentials, or one
// header given twice, give CodeBadRequest; a malformed one (an unknown
// Authorization scheme, Basic that is not base64 of email:password) gives
// the invalid-credential error.
func ParseCredential(apiKey, authorization []string) (resourceapi.Credential, error) {
	apiKey, authorization = nonEmpty(apiKey), nonEmpty(authorization)
	switch {
	case len(apiKey)+len(authorization) > 1:
		return resourceapi.Credential{}, errTwoCredentials
	case len(apiKey) == 1:
		key := strings.TrimSpace(apiKey[0])
		if len(key) > maxCredentialLen {
			return resourceapi.Credential{}, errInvalidCredential
		}
		return resourceapi.Credential{Scheme: resourceapi.SchemeAPIKey, Secret: key}, nil
	case len(authorization) == 1:
		return parseAuthorization(strings.TrimSpace(authorization[0]))
	}
	return resourceapi.Credential{}, nil
}

func nonEmpty(values []string) []string {
	n := 0
	for _, v := range values {
		if strings.TrimSpace(v) != "" {
			n++
		}
	}
	if n == len(values) {
		return values
	}
	out := make([]string, 0, n)
	for _, v := range values {
		if strings.TrimSpace(v) != "" {
			out = append(out, v)
		}
	}
	return out
}

func parseAuthorization(v string) (resourceapi.Credential, error) {
	if len(v) > maxCredentialLen {
		return resourceapi.Credential{}, errInvalidCredential
	}
	scheme, rest, _ := strings.Cut(v, " ")
	rest = strings.TrimLeft(rest, " ")
	switch {
	case strings.EqualFold(scheme, "Bearer") && rest != "":
		return resourceapi.Credential{Scheme: resourceapi.SchemeBearer, Secret: rest}, nil
	case strings.EqualFold(scheme, "Basic") && rest != "":
		raw, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			// Some clients drop the padding.
			if raw, err = base64.RawStdEncoding.DecodeString(rest); err != nil {
				return resourceapi.Credential{}, errInvalidCredential
			}
		}
		email, password, ok := strings.Cut(string(raw), ":")
		if !ok || email == "" || !utf8.ValidString(email) || !utf8.ValidString(password) {
			return resourceapi.Credential{}, errInvalidCredential
		}
		return resourceapi.Credential{Scheme: resourceapi.SchemeBasic, Email: email, Password: password}, nil
	}
	return resourceapi.Credential{}, errInvalidCredential
}
