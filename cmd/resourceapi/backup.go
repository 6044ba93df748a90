package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/resourceapi/resourceapi/sqlite"
)

var backupCommand = &command{
	name:     "backup",
	synopsis: "[--force] <file>",
	summary:  "copy the SQLite database to a file, consistently, also while a server runs",
	about: `Write a consistent copy of the SQLite database to <file>: the database as of
one moment, with every write acknowledged before the backup began, also while
a server runs and writes (SQLite's VACUUM INTO, in one read transaction; the
server does not wait for it). The copy is written to a temporary file beside
<file> and renamed when complete and on disk. It refuses an existing <file>
unless --force is given. A progress bar shows on a terminal.

To restore: stop the server, replace the database file with the copy (and
delete the old file's -wal and -shm files), start the server. On PostgreSQL,
use pg_dump and pg_restore instead: see docs/operations.md.`,
	minArgs: 1, maxArgs: 1,
	setup: func(flags *flag.FlagSet) action {
		force := flags.Bool("force", false, "replace <file> if it exists")
		return func(ctx context.Context, e *invocation, args []string) error {
			cfg, err := loadConfig(e.getenv)
			if err != nil {
				return err
			}
			if cfg.postgres() {
				return errors.New("backup copies a SQLite database; on PostgreSQL use pg_dump, for example\n" +
					"  pg_dump --format=custom --file=resourceapi.dump \"$RESOURCEAPI_DATABASE_URL\"\n" +
					"and pg_restore to restore it (see docs/operations.md)")
			}
			if err := cfg.requireSQLiteFile(); err != nil {
				return err
			}
			fmt.Fprintf(e.stderr, "resourceapi: using %s\n", cfg.describeDatabase())
			opts := sqlite.BackupOptions{Overwrite: *force}
			var bar *progressbar.ProgressBar
			if isTerminal(e.stderr) {
				opts.Progress = func(written, total int64) {
					if bar == nil {
						bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(e.stderr),
							progressbar.OptionSetDescription("backup"), progressbar.OptionShowBytes(true),
							progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish(), progressbar.OptionSetRenderBlankState(true))
					}
					bar.Set64(written)
				}
			}
			start := time.Now()
			err = sqlite.Backup(ctx, cfg.sqlitePath(), args[0], opts)
			if bar != nil {
				bar.Finish()
			}
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("%w (--force replaces it)", err)
			}
			if err != nil {
				return err
			}
			size := int64(0)
			if fi, err := os.Stat(args[0]); err == nil {
				size = fi.Size()
			}
			fmt.Fprintf(e.stdout, "Backed up %s to %s (%d bytes) in %s.\n", absPath(cfg.sqlitePath()), absPath(args[0]),
				size, time.Since(start).Round(time.Millisecond))
			return nil
		}
	},
}
