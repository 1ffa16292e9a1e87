// go-redis v9 over TLS (Options.TLSConfig) against BLINKDB_TLS_PORT, with and without a client
// certificate (run.sh's server has tls-auth-clients optional); the server's certificate is
// checked against the CA, its IP address included.
package clients

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

func tlsClient(t *testing.T, withCert bool, ca string) *redis.Client {
	t.Helper()
	dir := os.Getenv("BLINKDB_TLS_DIR")
	if dir == "" {
		t.Skip("BLINKDB_TLS_DIR not set: no TLS server")
	}
	pem, err := os.ReadFile(dir + "/" + ca)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	conf := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if withCert {
		cert, err := tls.LoadX509KeyPair(dir+"/client.crt", dir+"/client.key")
		if err != nil {
			t.Fatal(err)
		}
		conf.Certificates = []tls.Certificate{cert}
	}
	host := os.Getenv("BLINKDB_HOST")
	if host == "" {
		host = "127.0.0.1"
	}
	rdb := redis.NewClient(&redis.Options{Addr: host + ":" + os.Getenv("BLINKDB_TLS_PORT"),
		TLSConfig: conf, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func TestTLS(t *testing.T) {
	for _, withCert := range []bool{true, false} {
		name := "NoClientCert"
		if withCert {
			name = "ClientCert"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			rdb := tlsClient(t, withCert, "ca.crt")
			key := prefix + "tls:" + name
			if err := rdb.Ping(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			big := strings.Repeat("x", 300000)
			pipe := rdb.Pipeline()
			for i := 0; i < 200; i++ {
				pipe.Set(ctx, key+":"+string(rune('a'+i%26))+string(rune('0'+i/26)), i, 0)
			}
			pipe.Set(ctx, key+":big", big, 0)
			get := pipe.Get(ctx, key+":big")
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatal(err)
			}
			if get.Val() != big {
				t.Fatalf("big value: %d bytes back", len(get.Val()))
			}
			sub := tlsClient(t, withCert, "ca.crt").Subscribe(ctx, key+":chan")
			if _, err := sub.Receive(ctx); err != nil {
				t.Fatal(err)
			}
			if n, err := rdb.Publish(ctx, key+":chan", "hello").Result(); err != nil || n != 1 {
				t.Fatalf("publish: %d %v", n, err)
			}
			msg, err := sub.ReceiveMessage(ctx)
			if err != nil || msg.Payload != "hello" {
				t.Fatalf("message: %v %v", msg, err)
			}
			sub.Close()
			keys, _ := rdb.Keys(ctx, key+"*").Result()
			rdb.Del(ctx, keys...)
		})
	}
}

func TestTLSWrongCA(t *testing.T) {
	rdb := tlsClient(t, true, "client.crt")
	if err := rdb.Ping(context.Background()).Err(); err == nil {
		t.Fatal("a client trusting another CA connected")
	}
}
