package http

import (
	"bytes"
	"encoding/json"
)

// The objects of an OpenAPI 3.1 document, as far as the generator
// (openapi.go) writes them. Maps whose order a reader sees (paths,
// properties, responses) are ordered: the document lists paths as the
// routes do, and properties in declaration order, as responses have them.

type oaDocument struct {
	OpenAPI           string               `json:"openapi"`
	JSONSchemaDialect string               `json:"jsonSchemaDialect"`
	Info              oaInfo               `json:"info"`
	Servers           []oaServer           `json:"servers"`
	Security          []oaRequirement      `json:"security"`
	Tags              []oaTag              `json:"tags"`
	Paths             ordered[*oaPathItem] `json:"paths"`
	Components        oaComponents         `json:"components"`
}

type oaInfo struct {
	Title       string `json:"title"`
	Version     string `json:"version"`
	Description string `json:"description"`
}

type oaServer struct {
	URL         string `json:"url"`
	Description string `json:"description"`
}

type oaTag struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// oaRequirement is a security requirement: scheme names to scopes.
type oaRequirement map[string][]string

type oaPathItem struct {
	Servers    []oaServer   `json:"servers,omitempty"`
	Parameters []*oaParam   `json:"parameters,omitempty"`
	Get        *oaOperation `json:"get,omitempty"`
	Head       *oaOperation `json:"head,omitempty"`
	Post       *oaOperation `json:"post,omitempty"`
	Put        *oaOperation `json:"put,omitempty"`
	Patch      *oaOperation `json:"patch,omitempty"`
	Delete     *oaOperation `json:"delete,omitempty"`
	Options    *oaOperation `json:"options,omitempty"`
}

// operation returns the item's operation for method, or nil.
func (p *oaPathItem) operation(method string) **oaOperation {
	switch method {
	case "GET":
		return &p.Get
	case "HEAD":
		return &p.Head
	case "POST":
		return &p.Post
	case "PUT":
		return &p.Put
	case "PATCH":
		return &p.Patch
	case "DELETE":
		return &p.Delete
	case "OPTIONS":
		return &p.Options
	}
	return nil
}

type oaOperation struct {
	OperationID string               `json:"operationId"`
	Tags        []string             `json:"tags"`
	Summary     string               `json:"summary"`
	Description string               `json:"description,omitempty"`
	Parameters  []*oaParam           `json:"parameters,omitempty"`
	RequestBody *oaRequestBody       `json:"requestBody,omitempty"`
	Responses   ordered[*oaResponse] `json:"responses"`
	// Security, when not nil, replaces the document's; an empty list means
	// no credential is needed.
	Security *[]oaRequirement `json:"security,omitempty"`
}

type oaParam struct {
	Ref         string  `json:"$ref,omitempty"`
	Name        string  `json:"name,omitempty"`
	In          string  `json:"in,omitempty"`
	Description string  `json:"description,omitempty"`
	Required    bool    `json:"required,omitempty"`
	Style       string  `json:"style,omitempty"`
	Explode     *bool   `json:"explode,omitempty"`
	Schema      *schema `json:"schema,omitempty"`
}

type oaRequestBody struct {
	Description string                `json:"description,omitempty"`
	Required    bool                  `json:"required"`
	Content     ordered[*oaMediaType] `json:"content"`
}

type oaMediaType struct {
	Schema  *schema `json:"schema,omitempty"`
	Example any     `json:"example,omitempty"`
}

type oaResponse struct {
	Ref         string                `json:"$ref,omitempty"`
	Description string                `json:"description,omitempty"`
	Headers     ordered[*oaHeader]    `json:"headers,omitempty"`
	Content     ordered[*oaMediaType] `json:"content,omitempty"`
}

type oaHeader struct {
	Ref         string  `json:"$ref,omitempty"`
	Description string  `json:"description,omitempty"`
	Required    bool    `json:"required,omitempty"`
	Schema      *schema `json:"schema,omitempty"`
}

type oaComponents struct {
	Schemas         ordered[*schema]           `json:"schemas"`
	Responses       ordered[*oaResponse]       `json:"responses"`
	Parameters      ordered[*oaParam]          `json:"parameters"`
	Headers         ordered[*oaHeader]         `json:"headers"`
	SecuritySchemes ordered[*oaSecurityScheme] `json:"securitySchemes"`
}

type oaSecurityScheme struct {
	Type         string   `json:"type"`
	Description  string   `json:"description,omitempty"`
	Name         string   `json:"name,omitempty"`
	In           string   `json:"in,omitempty"`
	Scheme       string   `json:"scheme,omitempty"`
	BearerFormat string   `json:"bearerFormat,omitempty"`
	Flows        *oaFlows `json:"flows,omitempty"`
}

type oaFlows struct {
	AuthorizationCode *oaFlow `json:"authorizationCode,omitempty"`
	Password          *oaFlow `json:"password,omitempty"`
	ClientCredentials *oaFlow `json:"clientCredentials,omitempty"`
}

type oaFlow struct {
	AuthorizationURL string            `json:"authorizationUrl,omitempty"`
	TokenURL         string            `json:"tokenUrl"`
	RefreshURL       string            `json:"refreshUrl,omitempty"`
	Scopes           map[string]string `json:"scopes"`
}

// schema is a JSON Schema (2020-12) as OpenAPI 3.1 uses it.
type schema struct {
	Ref                  string           `json:"$ref,omitempty"`
	Description          string           `json:"description,omitempty"`
	Type                 any              `json:"type,omitempty"` // a name, or a list of names
	Format               string           `json:"format,omitempty"`
	Const                any              `json:"const,omitempty"`
	Enum                 []any            `json:"enum,omitempty"`
	Default              any              `json:"default,omitempty"`
	Minimum              *int64           `json:"minimum,omitempty"`
	Maximum              *int64           `json:"maximum,omitempty"`
	MinLength            *int             `json:"minLength,omitempty"`
	MaxLength            *int             `json:"maxLength,omitempty"`
	Pattern              string           `json:"pattern,omitempty"`
	Items                *schema          `json:"items,omitempty"`
	MinItems             *int             `json:"minItems,omitempty"`
	MaxItems             *int             `json:"maxItems,omitempty"`
	Properties           ordered[*schema] `json:"properties,omitempty"`
	Required             []string         `json:"required,omitempty"`
	AdditionalProperties *bool            `json:"additionalProperties,omitempty"`
	MinProperties        *int             `json:"minProperties,omitempty"`
	AllOf                []*schema        `json:"allOf,omitempty"`
	OneOf                []*schema        `json:"oneOf,omitempty"`
	ReadOnly             bool             `json:"readOnly,omitempty"`
	WriteOnly            bool             `json:"writeOnly,omitempty"`
}

// ordered is a JSON object whose members keep the order they were set in.
type ordered[T any] []member[T]

type member[T any] struct {
	key   string
	value T
}

// set adds or replaces the member key.
func (o *ordered[T]) set(key string, v T) {
	for i := range *o {
		if (*o)[i].key == key {
			(*o)[i].value = v
			return
		}
	}
	*o = append(*o, member[T]{key, v})
}

// get returns the member key and whether there is one.
func (o ordered[T]) get(key string) (T, bool) {
	for _, m := range o {
		if m.key == key {
			return m.value, true
		}
	}
	var zero T
	return zero, false
}

func (o ordered[T]) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m.value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
