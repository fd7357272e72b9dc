package redis

// Atomic slot migration (issue 20, item 1): Valkey 9.0+ moves slots with
// CLUSTER MIGRATESLOTS and reports each job in CLUSTER GETSLOTMIGRATIONS;
// Redis 8.4+ with CLUSTER MIGRATION IMPORT and CLUSTER MIGRATION STATUS.
// Neither sets the MIGRATING/IMPORTING flags of CLUSTER NODES, so a move is
// seen only there. Both keep finished jobs (success, failed, cancelled) in a
// bounded log, which is how a failed or cancelled move is seen at all.
//
// Which command a node has is read once per connection from INFO server
// (migrationAPIOf); the command is then sent in the node's pipeline on
// every refresh, and only to nodes that have it. A reply that is an error
// (an ACL refusing it, a server swapped under the same address) leaves the
// node's jobs unread and the refresh goes on.

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
	"github.com/redis/rueidis"
)

// migrationAPI is the atomic slot migration command a node has.
type migrationAPI int32

const (
	migrationAPIUnknown migrationAPI = iota // not read yet
	migrationAPINone                        // Redis before 8.4, Valkey before 9.0
	migrationAPIValkey                      // CLUSTER GETSLOTMIGRATIONS
	migrationAPIRedis                       // CLUSTER MIGRATION STATUS ALL
)

// migrationAPIOf reads the API from INFO server: Valkey 9.0+ (server_name
// valkey, or a valkey_version line) or Redis 8.4+ (redis_version, without
// either).
func migrationAPIOf(infoServer string) migrationAPI {
	fields, err := redisproto.ParseInfoFields(infoServer)
	if err != nil {
		return migrationAPINone
	}
	if v := fields.Value("valkey_version"); v != "" || fields.Value("server_name") == "valkey" {
		if major, _ := versionOf(v); major >= 9 {
			return migrationAPIValkey
		}
		return migrationAPINone
	}
	if major, minor := versionOf(fields.Value("redis_version")); major > 8 || major == 8 && minor >= 4 {
		return migrationAPIRedis
	}
	return migrationAPINone
}

// versionOf returns the major and minor numbers of "8.4.0" (0, 0 when it
// is not one).
func versionOf(v string) (major, minor int) {
	parts := strings.SplitN(v, ".", 3)
	major, _ = strconv.Atoi(parts[0])
	if len(parts) > 1 {
		minor, _ = strconv.Atoi(parts[1])
	}
	return major, minor
}

// readMigrationAPI returns the node's API, reading INFO server the first
// time (one more round trip, once per connection). It returns
// migrationAPIUnknown, to be tried again next refresh, when INFO fails.
func (nc *nodeClient) readMigrationAPI(ctx context.Context, client rueidis.Client) migrationAPI {
	if api := migrationAPI(nc.migrationAPI.Load()); api != migrationAPIUnknown {
		return api
	}
	text, err := client.Do(ctx, client.B().Info().Section("server").Build()).ToString()
	if err != nil {
		return migrationAPIUnknown
	}
	api := migrationAPIOf(text)
	nc.migrationAPI.Store(int32(api))
	return api
}

// migrationCommand is the command that lists the node's jobs, nil for none.
func migrationCommand(client rueidis.Client, api migrationAPI) rueidis.Completed {
	switch api {
	case migrationAPIValkey:
		return client.B().Arbitrary("CLUSTER", "GETSLOTMIGRATIONS").Build()
	default:
		return client.B().Arbitrary("CLUSTER", "MIGRATION", "STATUS", "ALL").Build()
	}
}

// readMigrations decodes the reply of migrationCommand. An unknown command
// means the server is not what INFO said (swapped under the address): the
// API is read again next time.
func (nc *nodeClient) readMigrations(reply rueidis.RedisResult, api migrationAPI) ([]SlotMigration, error) {
	rows, err := reply.ToArray()
	if err != nil {
		if e, ok := rueidis.IsRedisErr(err); ok && strings.Contains(strings.ToLower(e.Error()), "unknown") {
			nc.migrationAPI.Store(int32(migrationAPIUnknown))
		}
		return nil, err
	}
	jobs := make([]SlotMigration, 0, len(rows))
	for i, row := range rows {
		fields, err := migrationFields(row)
		if err != nil {
			return nil, fmt.Errorf("job %d: %w", i, err)
		}
		parse := parseValkeyMigration
		if api == migrationAPIRedis {
			parse = parseRedisMigration
		}
		job, err := parse(fields)
		if err != nil {
			return nil, fmt.Errorf("job %d: %w", i, err)
		}
		jobs = append(jobs, job)
	}
	return jobs, nil
}

// migrationFields turns one job (a map in RESP3, a flat array of names and
// values in RESP2) into text fields.
func migrationFields(row rueidis.RedisMessage) (map[string]string, error) {
	m, err := row.AsMap()
	if err != nil {
		return nil, err
	}
	fields := make(map[string]string, len(m))
	for name, value := range m {
		if s, err := value.ToString(); err == nil {
			fields[name] = s
		} else if n, err := value.AsInt64(); err == nil {
			fields[name] = strconv.FormatInt(n, 10)
		}
	}
	return fields, nil
}
