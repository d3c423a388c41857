// Package catalog opens the Iceberg catalog icebloom works against and
// registers index statistics files in table metadata through it.
//
// Catalogs are selected the way iceberg-go's iceberg CLI selects them: flags,
// over a section of the ~/.iceberg-go.yaml config file, over defaults. With no
// catalog configured at all, icebloom uses an embedded SQLite catalog in
// ./warehouse, so it works out of the box.
package catalog

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/glue"
	"github.com/apache/iceberg-go/catalog/hadoop"
	"github.com/apache/iceberg-go/catalog/hive"
	"github.com/apache/iceberg-go/catalog/rest"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/config"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/uptrace/bun/driver/sqliteshim"
	"gopkg.in/yaml.v3"

	// Tables may live on object storage whatever the catalog: register the
	// s3, gs and azure file IO schemes, as the iceberg CLI does.
	_ "github.com/apache/iceberg-go/io/gocloud"
)

// DefaultName is the catalog name used when none is given: the config file
// section read when the file names no default-catalog, and the name the SQL
// catalog stores its tables under.
const DefaultName = "default"

// defaultDir is the directory of the embedded catalog, relative to the
// working directory.
const defaultDir = "warehouse"

// ErrNoCatalog is the error of Open when nothing is configured and the
// embedded catalog in ./warehouse does not exist: Open never creates it,
// so that a command reading a table in the wrong directory leaves nothing
// behind. Embedded catalogs opened by name (Embedded) are created.
var ErrNoCatalog = errors.New("no catalog")

// Options selects and configures a catalog. They are the global flags of the
// icebloom command and follow those of iceberg-go's iceberg CLI, so a setup
// that works with one works with the other; the struct tags let a go-arg
// command embed Options directly.
//
// A zero field was not given: Open fills it from the config file section of
// the catalog, and failing that from the defaults. So a flag given on the
// command line overrides the file field by field.
type Options struct {
	// Type is the catalog type: sql, rest, glue, hive or hadoop.
	Type string `arg:"--catalog,env:ICEBLOOM_CATALOG_TYPE" help:"catalog type: sql, rest, glue, hive or hadoop [default: from the config file, else an embedded SQLite catalog in ./warehouse]"`
	// Name selects the config file section and names the catalog; "" means
	// the file's default-catalog, else DefaultName. A section opens under
	// its own name however it was picked, unless Type and URI are given,
	// which make the catalog another than the section's.
	Name string `arg:"--catalog-name,env:ICEBLOOM_CATALOG_NAME" help:"catalog name, selecting the config file section [default: the file's default-catalog, else default]"`
	// URI is the catalog's endpoint: the REST or Hive Metastore URI, or the
	// SQL catalog's database DSN. A SQLite DSN that names no busy timeout
	// gets one of 10 s, as the embedded catalog has.
	URI string `arg:"--uri,env:ICEBLOOM_CATALOG_URI" help:"catalog URI (for sql: the database DSN)"`
	// Warehouse is the location new tables are created under.
	Warehouse string `arg:"--warehouse,env:ICEBLOOM_CATALOG_WAREHOUSE" help:"warehouse location"`
	// ConfigPath is the config file; "" means ~/.iceberg-go.yaml, which may
	// be missing, while a file named here must exist.
	ConfigPath string `arg:"--config" help:"config file [default: ~/.iceberg-go.yaml]"`
	// SQLDriver is the database/sql driver of a SQL catalog; "" means
	// sqliteshim, the SQLite driver built into icebloom.
	SQLDriver string `arg:"--sql-driver" help:"database/sql driver of the sql catalog: sqliteshim (SQLite) or pgx (PostgreSQL) [default: sqliteshim]"`
	// SQLDialect is the SQL dialect of a SQL catalog; "" means sqlite.
	SQLDialect string `arg:"--sql-dialect" help:"SQL dialect of the sql catalog: sqlite or postgres [default: sqlite]"`
	// Credential is the REST catalog's OAuth client credential
	// (client-id:client-secret).
	Credential string `arg:"--credential,env:ICEBLOOM_CATALOG_CREDENTIAL" help:"REST catalog OAuth credential (client-id:client-secret); a flag's value shows in the process list: prefer the variable, or a file"`
	// CredentialFile is a file holding Credential (a mounted Secret): read
	// by Open, its trailing line break dropped, so that the credential is
	// neither in the process list nor in the environment.
	CredentialFile string `arg:"--credential-file,env:ICEBLOOM_CATALOG_CREDENTIAL_FILE" placeholder:"PATH" help:"read the REST catalog OAuth credential from this file"`
	// Token is a REST catalog OAuth token; it takes precedence over
	// Credential and skips the OAuth flow.
	Token string `arg:"--token,env:ICEBLOOM_CATALOG_TOKEN" help:"REST catalog OAuth token (skips the OAuth flow)"`
	// TokenFile is a file holding Token, read as CredentialFile is.
	TokenFile string `arg:"--token-file,env:ICEBLOOM_CATALOG_TOKEN_FILE" placeholder:"PATH" help:"read the REST catalog OAuth token from this file"`
	// Scope is the REST catalog's OAuth scope; "" leaves the catalog's
	// default.
	Scope string `arg:"--scope,env:ICEBLOOM_CATALOG_SCOPE" help:"REST catalog OAuth scope"`
	// Prefix is the REST catalog's path prefix; "" takes the one the
	// server's /v1/config names.
	Prefix string `arg:"--rest-prefix" help:"REST catalog path prefix [default: from the server's config]"`
	// Properties are extra catalog properties as key=value, passed to the
	// catalog and from it to the tables' file IO: s3.endpoint,
	// s3.region, s3.access-key-id, s3.secret-access-key,
	// s3.force-virtual-addressing=false, gcs.*, adls.* and so on (the keys
	// of iceberg-go's io package). They are how a table on a MinIO-like
	// server is reached when the catalog does not hand out its storage
	// settings itself.
	Properties []string `arg:"--property,separate" help:"catalog and storage property key=value, repeatable (e.g. s3.endpoint=http://minio:9000)"`
	// AWSProfile is the shared AWS config profile of a Glue catalog.
	AWSProfile string `arg:"--aws-profile" help:"AWS profile of the glue catalog"`
	// Rest holds the REST catalog's SigV4 signing settings. As in the
	// iceberg CLI they come from the config file's rest section only.
	Rest *config.RestOptions `arg:"-"`
	// MustExist makes Open refuse a catalog that does not exist rather
	// than create one: a SQLite database file that is missing is an error
	// naming the file, and a SQL catalog's tables are not created in a
	// database without them. Commands that work on existing tables set it,
	// so that a typo in --uri reads as a missing file, not as a missing
	// namespace of a catalog just created; the embedded catalogs of
	// Embedded are still created.
	MustExist bool `arg:"-"`

	// embedded, when set, is the directory of an embedded SQLite catalog:
	// Open fills the fields still empty from it and, unless mustExist,
	// creates it.
	embedded string
	// mustExist: the embedded catalog is the default one, which Open opens
	// only when it exists.
	mustExist bool
}

// Embedded returns the options of the embedded catalog rooted at dir: an
// iceberg-go SQL catalog on SQLite in dir/catalog.db whose warehouse is dir.
// It is what Open uses, rooted at ./warehouse, when no catalog is configured,
// and what a command that sets up its own catalog (such as quickstart) opens.
// The config file does not apply to it.
func Embedded(dir string) Options {
	return Options{Type: string(icecatalog.SQL), Name: DefaultName, embedded: dir}
}

// Open opens the catalog o selects. Fields of o that are zero are taken from
// the config file section for o.Name, and then from the defaults; when no
// catalog type or URI is configured at all, Open opens the embedded catalog in
// ./warehouse if it exists, and returns an error wrapping ErrNoCatalog that
// names its path if not. Errors of a SQLite catalog name its database file.
//
// The catalog may hold resources (the SQL catalog holds a database handle):
// release them through iceberg-go's catalog.Closer when it implements it.
//
// A catalog that cannot take the connection now (IsTransient: a PostgreSQL
// server at its connection limit, a locked SQLite file, a REST catalog's
// 503) is opened again with backoff for up to OpenRetryBudget, or as opts
// say (WithTimeBudget, WithLogger for the retries' warnings): the pods of a
// sharded run start at once, and one that finds every connection taken
// should wait its turn, not fail and re-read its shard.
func Open(ctx context.Context, o Options, opts ...CommitOption) (icecatalog.Catalog, error) {
	o, err := resolve(o)
	if err != nil {
		return nil, err
	}
	name := cmp.Or(o.Name, DefaultName)
	props, err := parseProperties(o.Properties)
	if err != nil {
		return nil, err
	}
	cfg := newConfig(append([]CommitOption{WithTimeBudget(OpenRetryBudget)}, opts...))
	var cat icecatalog.Catalog
	err = retrySubject(ctx, &cfg, "catalog", name, "open", func(ctx context.Context) (bool, error) {
		var err error
		cat, err = open(ctx, name, o, maps.Clone(props))
		return IsTransient(err), err
	})
	if err != nil {
		return nil, fmt.Errorf("open catalog %q: %w", name, err)
	}
	return cat, nil
}

// OpenRetryBudget is how long Open keeps trying a catalog that fails in a
// way worth retrying.
const OpenRetryBudget = 5 * time.Minute

// resolve layers o over the config file and the defaults.
func resolve(o Options) (Options, error) {
	var err error
	if o.Credential, err = fromFile("credential", o.Credential, o.CredentialFile); err != nil {
		return o, err
	}
	if o.Token, err = fromFile("token", o.Token, o.TokenFile); err != nil {
		return o, err
	}
	if o.embedded == "" {
		if o, err = withConfigFile(o); err != nil {
			return o, err
		}
		if o.Type == "" && o.URI == "" {
			o.embedded, o.mustExist = defaultDir, true
		}
	}
	if o.embedded != "" {
		return withEmbedded(o)
	}
	if o.Type == "" {
		// A URI alone says which catalog only when it is a REST endpoint,
		// which is also how iceberg-go's catalog.Load reads it.
		if u, err := url.Parse(o.URI); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
			o.Type = string(icecatalog.REST)
		} else {
			return o, fmt.Errorf("catalog URI %s: give the catalog type (--catalog)", o.URI)
		}
	}
	return o, nil
}

// withConfigFile fills the zero fields of o from the config file section of
// the catalog, the way the iceberg CLI merges its flags with the file.
func withConfigFile(o Options) (Options, error) {
	data, err := config.LoadConfigFile(o.ConfigPath) // names the file in its errors
	if err != nil {
		return o, err
	}
	path := o.ConfigPath
	if path == "" {
		home, _ := os.UserHomeDir() // LoadConfigFile has resolved it already
		path = filepath.Join(home, ".iceberg-go.yaml")
	}
	sect, err := config.ParseConfig(data, o.Name)
	if err != nil {
		return o, fmt.Errorf("parse config file %s: %w", path, err)
	}
	if sect != nil && o.Name == "" && (o.Type == "" || o.URI == "") {
		// The section default-catalog picked names the catalog, as when
		// it is picked by name: a SQL catalog keys its tables by its name,
		// so the same section opened under two names showed two sets of
		// tables. (iceberg-go's CLI opens it as "default".) Flags that
		// give the type and URI themselves name another catalog, which
		// keeps the default name.
		o.Name = defaultSection(data)
	}
	if sect == nil {
		// A catalog asked for by name, or in a file given by name, must be
		// there unless the flags say which catalog it is: falling back to the
		// embedded catalog would silently work on other tables.
		if o.Type == "" && (o.Name != "" || o.ConfigPath != "") {
			what := fmt.Sprintf("catalog %q", o.Name)
			if o.Name == "" {
				what = "the default catalog" // the file's default-catalog, else DefaultName
			}
			return o, fmt.Errorf("%s is not in config file %s", what, path)
		}
		return o, nil
	}
	fill := func(field *string, v string) {
		if *field == "" {
			*field = v
		}
	}
	fill(&o.Type, sect.CatalogType)
	fill(&o.URI, sect.URI)
	fill(&o.Warehouse, sect.Warehouse)
	fill(&o.Credential, sect.Credential)
	fill(&o.AWSProfile, sect.AwsProfile)
	fill(&o.SQLDriver, sect.SQLDriver)
	fill(&o.SQLDialect, sect.SQLDialect)
	if o.Rest == nil {
		o.Rest = sect.RestOptions
	}
	return o, nil
}

// defaultSection returns the name of the section a config file's
// default-catalog picks: that field, else DefaultName. The file parsed
// already (config.ParseConfig).
func defaultSection(data []byte) string {
	var file config.Config
	if err := yaml.Unmarshal(data, &file); err != nil {
		return DefaultName
	}
	return cmp.Or(file.DefaultCatalog, DefaultName)
}

// withEmbedded fills o as the embedded catalog in o.embedded and creates the
// directory, or with o.mustExist checks that the catalog's database exists.
// The warehouse is stored as an absolute file:// location so that the
// tables are usable from any working directory.
func withEmbedded(o Options) (Options, error) {
	dir, err := filepath.Abs(o.embedded)
	if err != nil {
		return o, fmt.Errorf("embedded catalog %s: %w", o.embedded, err)
	}
	db := filepath.Join(dir, "catalog.db")
	if o.mustExist {
		if _, err := os.Stat(db); errors.Is(err, fs.ErrNotExist) {
			return o, fmt.Errorf("%w at %s: with no catalog configured (--catalog and --uri, or ~/.iceberg-go.yaml) icebloom uses the embedded one there, which `icebloom quickstart` creates", ErrNoCatalog, db)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return o, fmt.Errorf("embedded catalog: %w", err)
	}
	o.Type = string(icecatalog.SQL)
	// The busy timeout makes concurrent writers (two icebloom processes, or
	// icebloom and the iceberg CLI) wait for each other instead of failing
	// with "database is locked"; WAL lets readers run beside a writer. Both
	// drivers sqliteshim picks from understand these parameters.
	o.URI = db + "?" + sqliteBusyTimeout + "&_journal_mode=WAL"
	if o.Warehouse == "" {
		slashed := filepath.ToSlash(dir)
		if !strings.HasPrefix(slashed, "/") {
			slashed = "/" + slashed // a Windows drive path: file:///C:/...
		}
		o.Warehouse = (&url.URL{Scheme: "file", Path: slashed}).String()
	}
	return o, nil
}

// PropertyMap is o.Properties as a map (a later key wins), for a command
// that configures storage apart from a catalog (serve's proxy mode reads
// every table with them).
func (o Options) PropertyMap() (iceberg.Properties, error) { return parseProperties(o.Properties) }

// parseProperties parses key=value properties; a later key wins.
func parseProperties(kvs []string) (iceberg.Properties, error) {
	props := iceberg.Properties{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if k = strings.TrimSpace(k); !ok || k == "" {
			return nil, fmt.Errorf("property %q: want key=value", kv)
		}
		props[k] = v
	}
	return props, nil
}

// open opens the catalog of the fully resolved o with the extra properties
// props.
func open(ctx context.Context, name string, o Options, props iceberg.Properties) (icecatalog.Catalog, error) {
	switch icecatalog.Type(strings.ToLower(o.Type)) {
	case icecatalog.SQL:
		if o.URI == "" {
			return nil, errors.New("sql catalog: no database DSN (--uri)")
		}
		all := sqlProperties(o)
		for k, v := range props {
			if _, fixed := all[k]; fixed && k != "init_catalog_tables" {
				return nil, fmt.Errorf("property %s: set it with its own flag", k)
			}
			all[k] = v
		}
		file, isSQLite := sqliteFile(all[sqlcat.DriverKey], o.URI)
		if isSQLite {
			if err := checkSQLiteFile(file); err != nil {
				return nil, err
			}
		}
		if o.MustExist && o.embedded == "" {
			if isSQLite {
				if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
					return nil, fmt.Errorf("SQLite catalog %s: no such file (icebloom opens an existing catalog; check --uri)", file)
				}
			}
			all["init_catalog_tables"] = "false"
		}
		// Opened as iceberg-go's registrar opens it, keeping the database
		// handle, so that the catalog can also say where a table's
		// metadata is without reading it (MetadataLocator).
		cat, err := openSQL(name, all)
		if err != nil && isSQLite {
			// The drivers' errors ("unable to open database file (14)",
			// "file is not a database (26)") do not say which file.
			return nil, fmt.Errorf("SQLite catalog %s: %w", file, err)
		}
		if err != nil {
			return nil, err
		}
		return cat, nil
	case icecatalog.REST:
		if o.URI == "" {
			return nil, errors.New("rest catalog: no endpoint URI (--uri)")
		}
		var opts []rest.Option
		if o.Token != "" {
			opts = append(opts, rest.WithOAuthToken(o.Token))
		} else if o.Credential != "" {
			opts = append(opts, rest.WithCredential(o.Credential))
		}
		if o.Warehouse != "" {
			opts = append(opts, rest.WithWarehouseLocation(o.Warehouse))
		}
		if o.Scope != "" {
			opts = append(opts, rest.WithScope(o.Scope))
		}
		if o.Prefix != "" {
			opts = append(opts, rest.WithPrefix(o.Prefix))
		}
		if len(props) > 0 {
			// Merged over the server's config, and from there into each
			// table's file IO properties.
			opts = append(opts, rest.WithAdditionalProps(props))
		}
		if r := o.Rest; r != nil {
			if r.SigV4Enabled {
				opts = append(opts, rest.WithSigV4())
			}
			if r.SigningName != "" || r.SigningRegion != "" {
				opts = append(opts, rest.WithSigV4RegionSvc(r.SigningRegion, r.SigningName))
			}
		}
		cat, err := rest.NewCatalog(ctx, name, o.URI, opts...)
		if errors.Is(err, rest.ErrOAuthError) {
			// iceberg-go reports it as a failure of the config request.
			return nil, fmt.Errorf("rest catalog %s: OAuth token request refused (check --credential or --token): %w", o.URI, err)
		}
		return cat, err
	case icecatalog.Glue:
		var load []func(*awsconfig.LoadOptions) error
		if o.AWSProfile != "" {
			load = append(load, awsconfig.WithSharedConfigProfile(o.AWSProfile))
		}
		cfg, err := awsconfig.LoadDefaultConfig(ctx, load...)
		if err != nil {
			return nil, fmt.Errorf("glue catalog: load AWS config: %w", err)
		}
		return glue.NewCatalog(glue.WithAwsConfig(cfg), glue.WithAwsProperties(glue.AwsProperties(props)))
	case icecatalog.Hive:
		if o.URI == "" {
			return nil, errors.New("hive catalog: no Hive Metastore URI (--uri)")
		}
		props[hive.URI] = o.URI
		if o.Warehouse != "" {
			props[hive.Warehouse] = o.Warehouse
		}
		return hive.NewCatalog(props)
	case icecatalog.Hadoop:
		if o.Warehouse == "" {
			return nil, errors.New("hadoop catalog: no warehouse (--warehouse)")
		}
		props["warehouse"] = o.Warehouse
		return hadoop.NewCatalog(name, o.Warehouse, props)
	default:
		return nil, fmt.Errorf("unknown catalog type %q: want sql, rest, glue, hive or hadoop", o.Type)
	}
}

// sqlProperties returns the properties of the SQL catalog o configures.
func sqlProperties(o Options) iceberg.Properties {
	driver := cmp.Or(o.SQLDriver, sqliteshim.ShimName)
	uri := o.URI
	switch driver {
	case sqliteshim.ShimName, "sqlite", "sqlite3": // sqliteshim's and the drivers it picks from
		uri = withBusyTimeout(uri)
	}
	// uri, warehouse and credential are set even when empty, so that
	// catalog.Load does not take them from a config file section of the same
	// name, which may be for another catalog.
	return iceberg.Properties{
		"type":            string(icecatalog.SQL),
		"uri":             uri,
		"warehouse":       o.Warehouse,
		"credential":      o.Credential,
		sqlcat.DriverKey:  driver,
		sqlcat.DialectKey: cmp.Or(o.SQLDialect, string(sqlcat.SQLite)),
		// Create the catalog's tables when the database has none yet:
		// iceberg-go's default, made explicit because the embedded catalog
		// relies on it.
		"init_catalog_tables": "true",
	}
}

// sqliteBusyTimeout is the DSN parameter that gives a SQLite connection a
// busy timeout of 10 s: a statement that finds the database locked by
// another connection (another icebloom process, the iceberg CLI) waits for
// it that long instead of failing at once with SQLITE_BUSY. Both drivers
// sqliteshim picks from, modernc.org/sqlite and mattn/go-sqlite3, read it.
const sqliteBusyTimeout = "_busy_timeout=10000"

// withBusyTimeout returns the SQLite DSN dsn, a path or a file: URI, with
// sqliteBusyTimeout added unless it names a busy timeout of its own
// (_busy_timeout, its alias _timeout, or _pragma=busy_timeout(...)). A DSN
// whose parameters do not parse is left to the driver to refuse.
func withBusyTimeout(dsn string) string {
	if dsn == "" {
		return dsn
	}
	_, query, hasQuery := strings.Cut(dsn, "?")
	params, err := url.ParseQuery(query)
	if err != nil || params.Has("_busy_timeout") || params.Has("_timeout") {
		return dsn
	}
	for _, p := range params["_pragma"] {
		if strings.HasPrefix(strings.ToLower(strings.TrimSpace(p)), "busy_timeout") {
			return dsn
		}
	}
	switch {
	case !hasQuery:
		return dsn + "?" + sqliteBusyTimeout
	case query == "" || strings.HasSuffix(query, "&"):
		return dsn + sqliteBusyTimeout
	}
	return dsn + "&" + sqliteBusyTimeout
}

// sqliteFile returns the database file of a SQL catalog on SQLite (driver
// sqliteshim or one of the drivers it picks from) with DSN dsn, a path or
// a file: URI; isSQLite is false for other drivers and for in-memory
// databases.
func sqliteFile(driver, dsn string) (file string, isSQLite bool) {
	switch driver {
	case sqliteshim.ShimName, "sqlite", "sqlite3":
	default:
		return "", false
	}
	file, _, _ = strings.Cut(dsn, "?")
	file = strings.TrimPrefix(file, "file:")
	if file == "" || strings.HasPrefix(file, ":memory:") || strings.Contains(dsn, "mode=memory") {
		return "", false
	}
	if u, err := url.PathUnescape(file); err == nil {
		file = u
	}
	return file, true
}

// checkSQLiteFile refuses what SQLite would only call "unable to open
// database file": a directory where the database file is expected, or a
// directory that does not exist around it.
func checkSQLiteFile(file string) error {
	if fi, err := os.Stat(file); err == nil && fi.IsDir() {
		return fmt.Errorf("SQLite catalog %s: is a directory, not a database file", file)
	}
	dir := filepath.Dir(file)
	if fi, err := os.Stat(dir); err != nil {
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			err = pe.Err // the path is said once
		}
		return fmt.Errorf("SQLite catalog %s: directory %s: %w", file, dir, err)
	} else if !fi.IsDir() {
		return fmt.Errorf("SQLite catalog %s: %s is not a directory", file, dir)
	}
	return nil
}

// fromFile returns value, or the content of file without its trailing line
// break when file is given: a secret as Kubernetes mounts one. Both given is
// an error: which one is meant is not clear.
func fromFile(what, value, file string) (string, error) {
	if file == "" {
		return value, nil
	}
	if value != "" {
		return "", fmt.Errorf("%s given both directly and in file %s: give one", what, file)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			err = pe.Err
		}
		return "", fmt.Errorf("%s file %s: %w", what, file, err)
	}
	v := strings.TrimRight(string(data), "\r\n")
	if v == "" {
		return "", fmt.Errorf("%s file %s is empty", what, file)
	}
	return v, nil
}
