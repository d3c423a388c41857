package catalogtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// The environment of the tests against a real S3-compatible server.
const (
	// S3EndpointEnv is the endpoint URL (http://127.0.0.1:port) of the
	// S3-compatible server the gateway tests use: Versity's S3 gateway in
	// .ci/run, which starts one and sets it. Any server that takes
	// path-style requests, lets the key create buckets and refuses unknown
	// keys with 403 InvalidAccessKeyId as AWS does will do (Versity's
	// gateway does so with an --iam-dir; without one it answers 404
	// XAdminUserNotFound).
	S3EndpointEnv = "ICEBLOOM_S3_ENDPOINT"
	// S3AccessKeyEnv and S3SecretKeyEnv are the credentials the server
	// accepts.
	S3AccessKeyEnv = "ICEBLOOM_S3_ACCESS_KEY"
	S3SecretKeyEnv = "ICEBLOOM_S3_SECRET_KEY"
	// S3DirEnv, optional, is the directory Versity's gateway serves
	// (versitygw posix DIR; a bucket is a directory in it, an object a file
	// in that): Backdate sets modification times there, as the S3 protocol
	// cannot. Tests that backdate fail without it.
	S3DirEnv = "ICEBLOOM_S3_DIR"
	// SkipS3GatewayEnv set to 1 skips the gateway tests. Nothing else does:
	// without it, a missing endpoint or an unreachable server fails them.
	SkipS3GatewayEnv = "ICEBLOOM_SKIP_S3GW"
)

// NewS3Gateway is NewS3 against the real S3-compatible server S3EndpointEnv
// names: it creates a bucket of the test's own there (deleted, with what it
// holds, at the end of the test) and serves, on loopback, a proxy in front
// of the server that records each request as the fake does. Clients reach
// the proxy at URL and sign for it; the proxy passes the Host header on
// unchanged, so the server checks their signatures (and refuses the decoys
// NewS3 puts in the environment). Put, PutObject and Objects reach the
// server directly, unrecorded; Backdate needs S3DirEnv.
//
// With SkipS3GatewayEnv=1 the test is skipped. Otherwise a missing endpoint
// or a server that cannot create the bucket fails the test, saying how to
// get a server. Because it calls t.Setenv, a test using it cannot be
// parallel.
func NewS3Gateway(t testing.TB) *S3 {
	t.Helper()
	if os.Getenv(SkipS3GatewayEnv) == "1" {
		t.Skipf("%s=1", SkipS3GatewayEnv)
	}
	how := "run .ci/run, which starts Versity's S3 gateway and sets " + S3EndpointEnv + ", " + S3AccessKeyEnv + ", " +
		S3SecretKeyEnv + " and " + S3DirEnv + ", or set them for a server of yours, or set " + SkipS3GatewayEnv +
		"=1 to skip the gateway tests"
	endpoint, key, secret := os.Getenv(S3EndpointEnv), os.Getenv(S3AccessKeyEnv), os.Getenv(S3SecretKeyEnv)
	if endpoint == "" || key == "" || secret == "" {
		t.Fatalf("%s, %s and %s must all be set: %s", S3EndpointEnv, S3AccessKeyEnv, S3SecretKeyEnv, how)
	}
	target, err := url.Parse(endpoint)
	if err != nil || target.Scheme == "" || target.Host == "" {
		t.Fatalf("%s=%q is not an endpoint URL (http://host:port): %s", S3EndpointEnv, endpoint, how)
	}
	hermeticAWS(t)

	g := &gatewayStore{
		client: s3.New(s3.Options{
			BaseEndpoint: aws.String(endpoint),
			Region:       s3TestRegion,
			Credentials:  credentials.NewStaticCredentialsProvider(key, secret, ""),
			UsePathStyle: true,
		}),
		bucket: bucketName(t.Name()),
		dir:    os.Getenv(S3DirEnv),
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := g.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(g.bucket)}); err != nil {
		t.Fatalf("create bucket %s on the server of %s %s: %v: %s", g.bucket, S3EndpointEnv, endpoint, err, how)
	}
	// Registered before the server's Close, so it runs after it (cleanups
	// run last first): no request of the test is still on its way.
	t.Cleanup(func() {
		if err := g.removeBucket(); err != nil {
			t.Errorf("delete bucket %s on %s: %v", g.bucket, endpoint, err)
		}
	})

	s := &S3{
		Bucket:          g.bucket,
		Region:          s3TestRegion,
		AccessKeyID:     key,
		SecretAccessKey: secret,
		store:           g,
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			// The client signed its request for the proxy's host.
			r.Out.Host = r.In.Host
		},
		// A client closing a response early (iceberg-go's Open does) is
		// not worth a log line.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	s.serve(proxy)
	t.Cleanup(s.Close)
	return s
}

// ForEachS3 runs test as a subtest against each S3 server a test can start:
// "fake", NewS3's in-process fake, and "gateway", NewS3Gateway's real
// server (which skips only with SkipS3GatewayEnv=1). Both record requests
// the same way, so one test holds both to the same expectations.
func ForEachS3(t *testing.T, test func(t *testing.T, s3 *S3)) {
	for _, srv := range []struct {
		name  string
		start func(testing.TB) *S3
	}{{"fake", NewS3}, {"gateway", NewS3Gateway}} {
		t.Run(srv.name, func(t *testing.T) { test(t, srv.start(t)) })
	}
}

var notBucketChar = regexp.MustCompile(`[^a-z0-9]+`)

// bucketName is a bucket name unique to a call for the test named test:
// lower case letters, digits and dashes, within S3's 63 characters, showing
// which test made it.
func bucketName(test string) string {
	name := strings.Trim(notBucketChar.ReplaceAllString(strings.ToLower(test), "-"), "-")
	if len(name) > 40 {
		name = strings.TrimRight(name[:40], "-")
	}
	suffix := make([]byte, 6)
	rand.Read(suffix)
	return "icebloom-" + name + "-" + hex.EncodeToString(suffix)
}

// gatewayStore is a bucket on a real server, reached directly with the AWS
// SDK.
type gatewayStore struct {
	client *s3.Client
	bucket string
	dir    string       // the directory the gateway serves, or ""
	offset atomic.Int64 // a time.Duration; see backdate
}

func (g *gatewayStore) put(key string, data []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := g.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(g.bucket), Key: aws.String(key), Body: bytes.NewReader(data),
	}); err != nil {
		return err
	}
	d := time.Duration(g.offset.Load())
	if d == 0 {
		return nil
	}
	if g.dir == "" {
		return fmt.Errorf("backdating %s needs %s, the directory the gateway serves", key, S3DirEnv)
	}
	// The posix backend reports a file's modification time as the
	// object's Last-Modified time.
	at := time.Now().Add(-d)
	return os.Chtimes(filepath.Join(g.dir, g.bucket, filepath.FromSlash(key)), at, at)
}

func (g *gatewayStore) objects(prefix string) (map[string]int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	objs := map[string]int64{}
	pages := s3.NewListObjectsV2Paginator(g.client, &s3.ListObjectsV2Input{
		Bucket: aws.String(g.bucket), Prefix: aws.String(prefix),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			objs[aws.ToString(o.Key)] = aws.ToInt64(o.Size)
		}
	}
	return objs, nil
}

func (g *gatewayStore) backdate(d time.Duration) { g.offset.Store(int64(d)) }

// removeBucket deletes every object of the bucket, then the bucket.
func (g *gatewayStore) removeBucket() error {
	objs, err := g.objects("")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var batch []types.ObjectIdentifier
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		out, err := g.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{
			Bucket: aws.String(g.bucket), Delete: &types.Delete{Objects: batch, Quiet: aws.Bool(true)},
		})
		batch = batch[:0]
		if err != nil {
			return err
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("delete %s: %s: %s (and %d more)", aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message), len(out.Errors)-1)
		}
		return nil
	}
	for key := range objs {
		batch = append(batch, types.ObjectIdentifier{Key: aws.String(key)})
		if len(batch) == 1000 { // DeleteObjects takes at most 1000 keys
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	_, err = g.client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(g.bucket)})
	return err
}
