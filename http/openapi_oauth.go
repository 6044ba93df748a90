package http

import (
	"strings"

	"github.com/resourceapi/resourceapi"
)

// The authorization server (Config.OAuth) routes its own paths under
// /oauth/; this package only mounts it. Its endpoints are those of the OAuth
// 2.0 RFCs (6749 and 7636 for the token endpoint and the authorization code
// grant with PKCE, 7009 for revocation, 8414 for the metadata), described
// here so that the document covers the whole server when it is mounted.

// oauthRoutes adds the authorization server's endpoints.
func (g *docGen) oauthRoutes(paths *ordered[*oaPathItem]) {
	g.oauthSchemas()
	form := func(schemaName string) *oaRequestBody {
		return &oaRequestBody{Required: true, Content: ordered[*oaMediaType]{
			{"application/x-www-form-urlencoded", &oaMediaType{Schema: &schema{Ref: ref("schemas", schemaName)}}}}}
	}
	tags := []string{"oauth"}
	hs := func(extra ...string) ordered[*oaHeader] {
		return g.headers(false, true, append([]string{hCacheControl}, extra...)...)
	}
	oauthError := func(desc string) *oaResponse {
		return &oaResponse{Description: desc, Headers: hs(),
			Content: ordered[*oaMediaType]{{"application/json", &oaMediaType{Schema: &schema{Ref: ref("schemas", "OAuthError")}}}}}
	}
	// Over the rate limit, the API's own 429 (version 1) answers; a throttled
	// password an OAuth error with Retry-After.
	tooMany := &oaResponse{Description: "Too many requests, or too many failed passwords for the account; Retry-After says when to come back.",
		Headers: hs(hRetryAfter),
		Content: ordered[*oaMediaType]{{"application/json", &oaMediaType{Schema: &schema{OneOf: []*schema{
			{Ref: ref("schemas", "OAuthError")}, g.envelopeFor(429)}}}}}}
	serverError := oauthError("The server could not complete the request (server_error).")
	html := func(desc string, extra ...string) *oaResponse {
		return &oaResponse{Description: desc, Headers: hs(extra...),
			Content: ordered[*oaMediaType]{{"text/html", &oaMediaType{}}}}
	}
	redirect := &oaResponse{Description: "Back to the client's redirect URI, with `code`, `state` and `iss`, or with `error`, `error_description`, `state` and `iss`.",
		Headers: hs(hLocation)}

	token := pathItem(paths, "/oauth/token")
	token.Servers = rootServers
	token.Parameters = []*oaParam{g.param("X-Request-ID")}
	token.Post = &oaOperation{OperationID: "oauthToken", Tags: tags, Summary: "Token endpoint",
		Description: "Issues an access token (and, for clients registered for it, a refresh token, which each use replaces). " +
			"The client authenticates with HTTP Basic (form-urlencoded client_id and secret) or with client_id and client_secret in the body, not both; a public client sends its client_id alone. Grants: " +
			strings.Join(resourceapi.GrantTypes(), ", ") + ".",
		RequestBody: form("OAuthTokenRequest"), Security: noSecurity()}
	token.Post.Responses.set("200", &oaResponse{Description: "The tokens.", Headers: hs(),
		Content: ordered[*oaMediaType]{{"application/json", &oaMediaType{Schema: &schema{Ref: ref("schemas", "OAuthToken")}}}}})
	token.Post.Responses.set("400", oauthError("The request is not valid (invalid_request, invalid_grant, unauthorized_client, unsupported_grant_type, invalid_scope)."))
	token.Post.Responses.set("401", &oaResponse{Description: "Client authentication failed (invalid_client).", Headers: hs(hWWWAuthenticateSometimes),
		Content: ordered[*oaMediaType]{{"application/json", &oaMediaType{Schema: &schema{Ref: ref("schemas", "OAuthError")}}}}})
	token.Post.Responses.set("429", tooMany)
	token.Post.Responses.set("500", serverError)

	revoke := pathItem(paths, "/oauth/revoke")
	revoke.Servers = rootServers
	revoke.Parameters = []*oaParam{g.param("X-Request-ID")}
	revoke.Post = &oaOperation{OperationID: "oauthRevoke", Tags: tags, Summary: "Revoke a refresh token (RFC 7009)",
		Description: "Revokes the refresh token and every token of its family. Unknown tokens are not an error. The client authenticates as at the token endpoint.",
		RequestBody: form("OAuthRevokeRequest"), Security: noSecurity()}
	revoke.Post.Responses.set("200", &oaResponse{Description: "Revoked (or unknown).", Headers: hs()})
	revoke.Post.Responses.set("400", oauthError("The request is not valid (invalid_request)."))
	revoke.Post.Responses.set("401", oauthError("Client authentication failed (invalid_client)."))
	revoke.Post.Responses.set("429", tooMany)
	revoke.Post.Responses.set("500", serverError)

	authorize := pathItem(paths, "/oauth/authorize")
	authorize.Servers = rootServers
	authorize.Parameters = []*oaParam{g.param("X-Request-ID")}
	q := func(name, desc string, required bool, s *schema) *oaParam {
		return &oaParam{Name: name, In: "query", Description: desc, Required: required, Schema: s}
	}
	str := func() *schema { return &schema{Type: "string"} }
	authorize.Get = &oaOperation{OperationID: "oauthAuthorize", Tags: tags, Summary: "Sign-in and consent page (authorization code grant)",
		Description: "Shows the page where the user signs in and allows or denies the client. `redirect_uri` must be one the client registered, exactly. PKCE with S256 is required.",
		Security:    noSecurity(),
		Parameters: []*oaParam{
			q("response_type", "Only `code`.", true, &schema{Type: "string", Enum: []any{"code"}}),
			q("client_id", "The client.", true, str()),
			q("redirect_uri", "One of the client's registered redirect URIs.", true, str()),
			q("code_challenge", "The base64url SHA-256 of the code verifier (43 characters).", true, str()),
			q("code_challenge_method", "Only `S256`.", true, &schema{Type: "string", Enum: []any{"S256"}}),
			q("state", "Returned to the client as it was sent.", false, str()),
			q("scope", "Only `api`, the default.", false, str()),
		}}
	authorize.Get.Responses.set("200", html("The sign-in page.", hCSP))
	authorize.Get.Responses.set("303", redirect)
	authorize.Get.Responses.set("400", html("An error page: the client or its redirect URI is unknown, so the user is not sent back.", hCSP))
	authorize.Get.Responses.set("414", html("The request is too long.", hCSP))
	authorize.Get.Responses.set("429", tooMany)
	authorize.Get.Responses.set("500", html("An error page.", hCSP))
	authorize.Post = &oaOperation{OperationID: "oauthAuthorizeSubmit", Tags: tags, Summary: "Submit the sign-in page",
		Description: "The form of the sign-in page: the user allows (with email and password) or denies. A wrong password shows the page again.",
		RequestBody: form("OAuthAuthorizeForm"), Security: noSecurity()}
	authorize.Post.Responses.set("200", html("The page again, with what went wrong.", hCSP))
	authorize.Post.Responses.set("303", redirect)
	authorize.Post.Responses.set("400", html("An error page.", hCSP))
	authorize.Post.Responses.set("403", html("The form expired or was not sent from this server's page.", hCSP))
	authorize.Post.Responses.set("429", tooMany)
	authorize.Post.Responses.set("500", html("An error page.", hCSP))

	meta := pathItem(paths, "/.well-known/oauth-authorization-server")
	meta.Servers = rootServers
	meta.Parameters = []*oaParam{g.param("X-Request-ID")}
	meta.Get = &oaOperation{OperationID: "oauthMetadata", Tags: tags, Summary: "Authorization server metadata (RFC 8414)",
		Security: noSecurity()}
	meta.Get.Responses.set("200", &oaResponse{Description: "The metadata.", Headers: g.headers(false, false, hCacheControl),
		Content: ordered[*oaMediaType]{{"application/json", &oaMediaType{Schema: &schema{Type: "object",
			Required: []string{"issuer", "authorization_endpoint", "token_endpoint"}}}}}})
	meta.Get.Responses.set("500", serverError)
	meta.Head = headOf(meta.Get, "oauthMetadataHead")
}

func (g *docGen) oauthSchemas() {
	str := func(desc string) *schema { return &schema{Type: "string", Description: desc} }
	var grants []any
	for _, gt := range resourceapi.GrantTypes() {
		grants = append(grants, gt)
	}
	s := &g.comp.Schemas
	s.set("OAuthError", &schema{Type: "object", Required: []string{"error"},
		Description: "An OAuth 2.0 error (RFC 6749 section 5.2).",
		Properties: ordered[*schema]{
			{"error", &schema{Type: "string", Enum: []any{"invalid_request", "invalid_client", "invalid_grant", "unauthorized_client",
				"unsupported_grant_type", "invalid_scope", "access_denied", "unsupported_response_type", "server_error"}}},
			{"error_description", str("Why, for people.")},
		}})
	s.set("OAuthToken", &schema{Type: "object", Required: []string{"access_token", "token_type", "expires_in", "scope"},
		Description: "A token response (RFC 6749 section 5.1).",
		Properties: ordered[*schema]{
			{"access_token", str("A JWT to send as `Authorization: Bearer`.")},
			{"token_type", &schema{Const: "Bearer"}},
			{"expires_in", &schema{Type: "integer", Description: "Seconds the access token is valid."}},
			{"refresh_token", str("For clients registered for the refresh_token grant: the next refresh token (each is used once).")},
			{"scope", &schema{Const: "api"}},
		}})
	s.set("OAuthTokenRequest", &schema{Type: "object", Required: []string{"grant_type"},
		Properties: ordered[*schema]{
			{"grant_type", &schema{Type: "string", Enum: grants}},
			{"client_id", str("The client, unless it authenticates with HTTP Basic.")},
			{"client_secret", str("A confidential client's secret, unless it authenticates with HTTP Basic.")},
			{"username", str("password grant: the user's email.")},
			{"password", str("password grant: the user's password.")},
			{"code", str("authorization_code grant: the code.")},
			{"code_verifier", str("authorization_code grant: the PKCE verifier.")},
			{"redirect_uri", str("authorization_code grant: the redirect URI of the authorization request.")},
			{"refresh_token", str("refresh_token grant: the refresh token.")},
			{"scope", str("Only `api`, the default.")},
		}})
	s.set("OAuthRevokeRequest", &schema{Type: "object", Required: []string{"token"},
		Properties: ordered[*schema]{
			{"token", str("The refresh token.")},
			{"token_type_hint", str("`refresh_token`, if given.")},
			{"client_id", str("The client, unless it authenticates with HTTP Basic.")},
			{"client_secret", str("A confidential client's secret, unless it authenticates with HTTP Basic.")},
		}})
	s.set("OAuthAuthorizeForm", &schema{Type: "object", Required: []string{"decision", "csrf_token"},
		Description: "The fields of the sign-in page's form: the authorization request's parameters, repeated, and these.",
		Properties: ordered[*schema]{
			{"decision", &schema{Type: "string", Enum: []any{"allow", "deny"}}},
			{"email", str("To allow: the user's email.")},
			{"password", str("To allow: the user's password.")},
			{"csrf_token", str("The token of the page.")},
			{"response_type", str("")}, {"client_id", str("")}, {"redirect_uri", str("")}, {"state", str("")},
			{"scope", str("")}, {"code_challenge", str("")}, {"code_challenge_method", str("")},
		}})
}
