//go:build !crashhook

package main

import "net/http"

// crashHook is the handler as it is: only test builds (-tags crashhook)
// can crash on request (crashhook_on.go).
func crashHook(h http.Handler) http.Handler { return h }
