// Starts Swagger UI on this server's OpenAPI document. Everything it loads
// comes from this server: the page's Content-Security-Policy allows nothing
// else. The online validator is off (it would send the document away), and
// so is the "Try it out" of every operation until a reader turns it on.
window.ui = SwaggerUIBundle({
  url: "/api/openapi.json",
  dom_id: "#api-reference",
  validatorUrl: null,
  deepLinking: true,
  docExpansion: "list",
  defaultModelsExpandDepth: 0,
  displayRequestDuration: true,
  oauth2RedirectUrl: window.location.origin + "/docs/oauth2-redirect.html",
});
window.ui.initOAuth({ usePkceWithAuthorizationCodeGrant: true, scopes: ["api"] });
