package resourceapi

// AppendJSONString is appendJSONString, for tests.
var AppendJSONString = appendJSONString
