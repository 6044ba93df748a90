package metrics

import (
	"database/sql"

	"github.com/prometheus/client_golang/prometheus"
)

// poolCollector is client_golang's collectors.NewDBStatsCollector, the same
// metrics, over a function that returns the statistics rather than a
// *sql.DB: the PostgreSQL store's pool is pgx's.
type poolCollector struct {
	stats func() sql.DBStats
	descs [9]*prometheus.Desc
}

func newPoolCollector(name string, stats func() sql.DBStats) *poolCollector {
	c := &poolCollector{stats: stats}
	for i, d := range [...][2]string{
		{"max_open_connections", "Maximum number of open connections to the database."},
		{"open_connections", "The number of established connections both in use and idle."},
		{"in_use_connections", "The number of connections currently in use."},
		{"idle_connections", "The number of idle connections."},
		{"wait_count_total", "The total number of connections waited for."},
		{"wait_duration_seconds_total", "The total time blocked waiting for a new connection."},
		{"max_idle_closed_total", "The total number of connections closed due to SetMaxIdleConns."},
		{"max_idle_time_closed_total", "The total number of connections closed due to SetConnMaxIdleTime."},
		{"max_lifetime_closed_total", "The total number of connections closed due to SetConnMaxLifetime."},
	} {
		c.descs[i] = prometheus.NewDesc("go_sql_"+d[0], d[1], nil, prometheus.Labels{"db_name": name})
	}
	return c
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	g, n := prometheus.GaugeValue, prometheus.CounterValue
	for i, v := range [...]struct {
		kind  prometheus.ValueType
		value float64
	}{
		{g, float64(s.MaxOpenConnections)}, {g, float64(s.OpenConnections)}, {g, float64(s.InUse)}, {g, float64(s.Idle)},
		{n, float64(s.WaitCount)}, {n, s.WaitDuration.Seconds()}, {n, float64(s.MaxIdleClosed)},
		{n, float64(s.MaxIdleTimeClosed)}, {n, float64(s.MaxLifetimeClosed)},
	} {
		ch <- prometheus.MustNewConstMetric(c.descs[i], v.kind, v.value)
	}
}
