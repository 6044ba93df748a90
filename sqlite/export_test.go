package sqlite

// SetMigratingHook makes Migrate call fn while it holds the file's lock, until
// the returned function restores the default.
func SetMigratingHook(fn func()) (restore func()) {
	testHookMigrating = fn
	return func() { testHookMigrating = nil }
}
