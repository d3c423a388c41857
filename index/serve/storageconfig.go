package serve

import (
	"strconv"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// Keys of the load-table config a client reads its table's storage with,
// beside iceberg-go's (io.S3EndpointURL, io.S3Region, ...): Java's path
// style switch (S3FileIOProperties.PATH_STYLE_ACCESS) and region
// (AwsClientProperties.CLIENT_REGION).
const (
	javaPathStyleKey = "s3.path-style-access"
	javaRegionKey    = iceio.S3ClientRegion
)

// ClientStorageConfig is the storage configuration catalog mode offers
// clients in each load-table answer's config, from serve's own storage
// properties (--property): the S3 endpoint, region and addressing style
// under the keys iceberg-go, PyIceberg and Java read, so that a client
// that has only its keys reads the table's files where serve does; with
// vend, serve's S3 credentials too (access key, secret, session token),
// which every caller allowed to load a table then holds.
func ClientStorageConfig(props iceberg.Properties, vend bool) map[string]string {
	config := map[string]string{}
	endpoint := props[iceio.S3EndpointURL]
	if endpoint != "" {
		config[iceio.S3EndpointURL] = endpoint
	}
	region := props[iceio.S3Region]
	if region == "" {
		region = props[iceio.S3ClientRegion]
	}
	if region != "" {
		config[iceio.S3Region] = region
		config[javaRegionKey] = region
	}
	// iceberg-go addresses buckets path-style whenever an endpoint is set,
	// unless told s3.force-virtual-addressing; Java and PyIceberg need
	// to be told either way.
	if endpoint != "" || props[iceio.S3ForceVirtualAddressing] != "" {
		virtual, _ := strconv.ParseBool(props[iceio.S3ForceVirtualAddressing])
		config[iceio.S3ForceVirtualAddressing] = strconv.FormatBool(virtual)
		config[javaPathStyleKey] = strconv.FormatBool(!virtual)
	}
	if vend {
		for _, k := range []string{iceio.S3AccessKeyID, iceio.S3SecretAccessKey, iceio.S3SessionToken} {
			if v := props[k]; v != "" {
				config[k] = v
			}
		}
	}
	return config
}

// loadTableConfig is catalog mode's load-table config for tbl: the storage
// configuration clients read it with, and scan-planning-mode=server for an
// indexed table.
func (s *Server) loadTableConfig(tbl *table.Table) map[string]string {
	config := ClientStorageConfig(s.o.StorageProperties, s.o.VendCredentials)
	if !s.o.NoScanPlanningMode && HasIndex(tbl.Metadata()) {
		config[ScanPlanningModeKey] = "server"
	}
	return config
}
