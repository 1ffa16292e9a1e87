// go-redis v9 with default options (HELLO 3 first, RESP2 fallback) against the server in BLINKDB_HOST/BLINKDB_PORT.
package clients

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const prefix = "clients:go:"

func serverAddr() string {
	host := os.Getenv("BLINKDB_HOST")
	if host == "" {
		host = "127.0.0.1"
	}
	port := os.Getenv("BLINKDB_PORT")
	if port == "" {
		port = "6379"
	}
	return host + ":" + port
}

// newClient returns a default-options client and deletes the suite's keys when the test ends.
func newClient(t *testing.T) (*redis.Client, context.Context) {
	t.Helper()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: serverAddr()})
	t.Cleanup(func() {
		if keys, err := rdb.Keys(ctx, prefix+"*").Result(); err == nil && len(keys) > 0 {
			rdb.Del(ctx, keys...)
		}
		rdb.Close()
	})
	return rdb, ctx
}

func allBytesValue() []byte {
	v := make([]byte, 0, 600)
	for b := 0; b < 256; b++ {
		v = append(v, byte(b))
	}
	v = append(v, []byte("\r\n\x00\r\n$-1\r\n")...)
	return append(v, v[:256]...)
}

func TestBinaryValuesRoundTrip(t *testing.T) {
	rdb, ctx := newClient(t)
	value := allBytesValue()
	if err := rdb.Set(ctx, prefix+"bin", value, 0).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := rdb.Get(ctx, prefix+"bin").Bytes()
	if err != nil || !bytes.Equal(got, value) {
		t.Fatalf("GET returned %q, %v", got, err)
	}
	binaryKey := prefix + "\x00\r\nkey\xff"
	rdb.Set(ctx, binaryKey, "\r\n", 0)
	if got := rdb.Get(ctx, binaryKey).Val(); got != "\r\n" {
		t.Fatalf("binary key: got %q", got)
	}
}

func TestMSetMGet(t *testing.T) {
	rdb, ctx := newClient(t)
	pairs := []interface{}{}
	keys := []string{}
	for b := 0; b < 256; b++ {
		k := fmt.Sprintf("%sbyte:%d", prefix, b)
		pairs = append(pairs, k, []byte{byte(b)})
		keys = append(keys, k)
	}
	if err := rdb.MSet(ctx, pairs...).Err(); err != nil {
		t.Fatal(err)
	}
	vals, err := rdb.MGet(ctx, append(keys, prefix+"missing")...).Result()
	if err != nil {
		t.Fatal(err)
	}
	for b := 0; b < 256; b++ {
		if vals[b] != string([]byte{byte(b)}) {
			t.Fatalf("MGET[%d] = %q", b, vals[b])
		}
	}
	if vals[256] != nil {
		t.Fatalf("missing key gave %v, want nil", vals[256])
	}
}

func TestExpireTTLAndPExpire(t *testing.T) {
	rdb, ctx := newClient(t)
	rdb.Set(ctx, prefix+"ttl", "v", 0)
	if ttl := rdb.TTL(ctx, prefix+"ttl").Val(); ttl != -1 {
		t.Fatalf("TTL without expiry = %v, want -1", ttl)
	}
	if ok := rdb.Expire(ctx, prefix+"ttl", 100*time.Second).Val(); !ok {
		t.Fatal("EXPIRE returned false")
	}
	if ttl := rdb.TTL(ctx, prefix+"ttl").Val(); ttl < 99*time.Second || ttl > 100*time.Second {
		t.Fatalf("TTL = %v, want 99-100s", ttl)
	}
	rdb.Set(ctx, prefix+"short", "v", 0)
	if ok := rdb.PExpire(ctx, prefix+"short", 100*time.Millisecond).Val(); !ok {
		t.Fatal("PEXPIRE returned false")
	}
	time.Sleep(250 * time.Millisecond)
	if err := rdb.Get(ctx, prefix+"short").Err(); err != redis.Nil {
		t.Fatalf("key after PEXPIRE 100 ms: err = %v, want redis.Nil", err)
	}
}

func TestPipelineOf1000Commands(t *testing.T) {
	rdb, ctx := newClient(t)
	pipe := rdb.Pipeline()
	incrs := make([]*redis.IntCmd, 0, 1000)
	for i := 0; i < 1000; i++ {
		incrs = append(incrs, pipe.Incr(ctx, fmt.Sprintf("%spipe:%d", prefix, i%10)))
	}
	cmds, err := pipe.Exec(ctx)
	if err != nil || len(cmds) != 1000 {
		t.Fatalf("Exec: %d commands, err %v", len(cmds), err)
	}
	for i, c := range incrs {
		if c.Val() != int64(i/10+1) {
			t.Fatalf("reply %d = %d, want %d", i, c.Val(), i/10+1)
		}
	}
}

// A pipeline whose requests and replies outgrow the socket buffers: go-redis writes it
// whole before it reads, so the server must keep reading while its replies wait.
func TestWholePipelineOf300kGets(t *testing.T) {
	rdb, ctx := newClient(t)
	value := strings.Repeat("v", 100)
	if err := rdb.Set(ctx, prefix+"pipe:big", value, 0).Err(); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 3; round++ {
		pipe := rdb.Pipeline()
		gets := make([]*redis.StringCmd, 0, 300000)
		for i := 0; i < 300000; i++ {
			gets = append(gets, pipe.Get(ctx, prefix+"pipe:big"))
		}
		cmds, err := pipe.Exec(ctx)
		if err != nil || len(cmds) != 300000 {
			t.Fatalf("round %d: Exec: %d commands, err %v", round, len(cmds), err)
		}
		if gets[0].Val() != value || gets[299999].Val() != value {
			t.Fatalf("round %d: wrong replies", round)
		}
	}
}

func TestIncrAndErrors(t *testing.T) {
	rdb, ctx := newClient(t)
	if n := rdb.Incr(ctx, prefix+"n").Val(); n != 1 {
		t.Fatalf("INCR = %d", n)
	}
	rdb.Set(ctx, prefix+"text", "abc", 0)
	assertRedisError(t, rdb.Incr(ctx, prefix+"text").Err(), "ERR value is not an integer or out of range")
	assertRedisError(t, rdb.Do(ctx, "GET").Err(), "ERR wrong number of arguments for 'get' command")
	if n := rdb.IncrBy(ctx, prefix+"n", -5).Val(); n != -4 {
		t.Fatalf("INCRBY = %d", n)
	}
}

func assertRedisError(t *testing.T, err error, want string) {
	t.Helper()
	var redisErr redis.Error
	if !errors.As(err, &redisErr) {
		t.Fatalf("error %v (%T) is not a redis.Error", err, err)
	}
	if redisErr.Error() != want {
		t.Fatalf("error text %q, want %q", redisErr.Error(), want)
	}
}

func TestBloomCommands(t *testing.T) {
	rdb, ctx := newClient(t)
	key := prefix + "bloom"
	if err := rdb.BFReserve(ctx, key, 0.01, 1000).Err(); err != nil {
		t.Fatal(err)
	}
	if added := rdb.BFAdd(ctx, key, "apple").Val(); !added {
		t.Fatal("BF.ADD of a new item returned false")
	}
	if added := rdb.BFAdd(ctx, key, "apple").Val(); added {
		t.Fatal("BF.ADD of a present item returned true")
	}
	if ok := rdb.BFExists(ctx, key, "apple").Val(); !ok {
		t.Fatal("BF.EXISTS of an added item returned false")
	}
	if ok := rdb.BFExists(ctx, key, "pear").Val(); ok {
		t.Fatal("BF.EXISTS of an absent item returned true")
	}
	info, err := rdb.BFInfo(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if info.Capacity != 1000 || info.ItemsInserted != 1 || info.Filters != 1 || info.ExpansionRate != 2 || info.Size <= 0 {
		t.Fatalf("BF.INFO = %+v", info)
	}
	assertRedisError(t, rdb.BFReserve(ctx, key, 0.01, 1000).Err(), "ERR item exists")
}

func TestReconnectsAfterServerRestart(t *testing.T) {
	rdb, ctx := newClient(t)
	restart := strings.Fields(os.Getenv("BLINKDB_RESTART_CMD"))
	if len(restart) == 0 {
		t.Fatal("BLINKDB_RESTART_CMD is not set; the reconnection test needs it")
	}
	rdb.Set(ctx, prefix+"durable", "kept", 0)
	if out, err := exec.Command(restart[0], restart[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("restart: %v: %s", err, out)
	}
	// Default options retry on a dropped pooled connection, so this must succeed at once.
	if got, err := rdb.Get(ctx, prefix+"durable").Result(); err != nil || got != "kept" {
		t.Fatalf("GET after restart = %q, %v", got, err)
	}
}

func TestDefaultOptionsNegotiateResp3(t *testing.T) {
	rdb, ctx := newClient(t)
	// HELLO without a version reports the protocol the connection already speaks.
	reply, err := rdb.Do(ctx, "HELLO").Result()
	if err != nil {
		t.Fatal(err)
	}
	fields, ok := reply.(map[interface{}]interface{})
	if !ok {
		t.Fatalf("HELLO reply is %T, want a RESP3 map", reply)
	}
	if fields["proto"] != int64(3) {
		t.Fatalf("proto = %v, want 3", fields["proto"])
	}
}

func TestTxPipelinedAndWatch(t *testing.T) {
	rdb, ctx := newClient(t)
	key := prefix + "tx"
	var incr *redis.IntCmd
	cmds, err := rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Set(ctx, key, "10", 0)
		incr = pipe.Incr(ctx, key)
		return nil
	})
	if err != nil || len(cmds) != 2 || incr.Val() != 11 {
		t.Fatalf("TxPipelined: %d cmds, incr %d, err %v", len(cmds), incr.Val(), err)
	}
	// Watch with retries: another client changes the key during the first attempt.
	attempts := 0
	other := redis.NewClient(&redis.Options{Addr: serverAddr()})
	defer other.Close()
	bump := func(tx *redis.Tx) error {
		attempts++
		n, err := tx.Get(ctx, key).Int()
		if err != nil {
			return err
		}
		if attempts == 1 {
			other.Set(ctx, key, "100", 0)
		}
		_, err = tx.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
			pipe.Set(ctx, key, n+1, 0)
			return nil
		})
		return err
	}
	for i := 0; i < 3; i++ {
		err = rdb.Watch(ctx, bump, key)
		if err != redis.TxFailedErr {
			break
		}
	}
	if err != nil || attempts != 2 || rdb.Get(ctx, key).Val() != "101" {
		t.Fatalf("Watch: attempts %d, value %q, err %v", attempts, rdb.Get(ctx, key).Val(), err)
	}
}

func TestSubscribeAndPSubscribe(t *testing.T) {
	rdb, ctx := newClient(t)
	channel := prefix + "news"
	sub := rdb.Subscribe(ctx, channel)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // the subscribe confirmation
		t.Fatal(err)
	}
	psub := rdb.PSubscribe(ctx, prefix+"n*")
	defer psub.Close()
	if _, err := psub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	n, err := rdb.Publish(ctx, channel, "hello").Result()
	if err != nil || n != 2 {
		t.Fatalf("PUBLISH reached %d receivers, err %v; want 2", n, err)
	}
	msg, err := sub.ReceiveMessage(ctx)
	if err != nil || msg.Channel != channel || msg.Payload != "hello" {
		t.Fatalf("subscriber got %+v, err %v", msg, err)
	}
	pmsg, err := psub.ReceiveMessage(ctx)
	if err != nil || pmsg.Pattern != prefix+"n*" || pmsg.Channel != channel || pmsg.Payload != "hello" {
		t.Fatalf("pattern subscriber got %+v, err %v", pmsg, err)
	}
	// Go channel delivery keeps publish order.
	for i := 0; i < 100; i++ {
		rdb.Publish(ctx, channel, fmt.Sprint(i))
	}
	ch := sub.Channel()
	for i := 0; i < 100; i++ {
		select {
		case m := <-ch:
			if m.Payload != fmt.Sprint(i) {
				t.Fatalf("message %d is %q", i, m.Payload)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("message %d did not arrive", i)
		}
	}
	counts, err := rdb.PubSubNumSub(ctx, channel).Result()
	if err != nil || counts[channel] != 1 {
		t.Fatalf("PUBSUB NUMSUB = %v, err %v", counts, err)
	}
}

func TestCollectionsRoundTrip(t *testing.T) {
	rdb, ctx := newClient(t)
	if n, err := rdb.HSet(ctx, prefix+"h", "a", "1", "b", "2").Result(); err != nil || n != 2 {
		t.Fatalf("HSET: %v %v", n, err)
	}
	if m, err := rdb.HGetAll(ctx, prefix+"h").Result(); err != nil || m["a"] != "1" || m["b"] != "2" || len(m) != 2 {
		t.Fatalf("HGETALL: %v %v", m, err)
	}
	if n, err := rdb.SAdd(ctx, prefix+"s", "x", "y", "3").Result(); err != nil || n != 3 {
		t.Fatalf("SADD: %v %v", n, err)
	}
	if ok, err := rdb.SIsMember(ctx, prefix+"s", "y").Result(); err != nil || !ok {
		t.Fatalf("SISMEMBER: %v %v", ok, err)
	}
	rdb.ZAdd(ctx, prefix+"z", redis.Z{Score: 1.5, Member: "m1"}, redis.Z{Score: -2, Member: "m2"})
	zs, err := rdb.ZRangeWithScores(ctx, prefix+"z", 0, -1).Result()
	if err != nil || len(zs) != 2 || zs[0].Member != "m2" || zs[0].Score != -2 || zs[1].Score != 1.5 {
		t.Fatalf("ZRANGE WITHSCORES: %v %v", zs, err)
	}
	rdb.RPush(ctx, prefix+"l", "a", "b", "c")
	if l, err := rdb.LRange(ctx, prefix+"l", 0, -1).Result(); err != nil || strings.Join(l, ",") != "a,b,c" {
		t.Fatalf("LRANGE: %v %v", l, err)
	}
	// A second client blocks; this one's push serves it.
	waiter := redis.NewClient(&redis.Options{Addr: serverAddr()})
	defer waiter.Close()
	popped := make(chan []string, 1)
	go func() {
		v, _ := waiter.BLPop(ctx, 5*time.Second, prefix+"q").Result()
		popped <- v
	}()
	time.Sleep(100 * time.Millisecond)
	rdb.RPush(ctx, prefix+"q", "job")
	if v := <-popped; len(v) != 2 || v[0] != prefix+"q" || v[1] != "job" {
		t.Fatalf("BLPOP: %v", v)
	}
	if _, err := waiter.BLPop(ctx, 50*time.Millisecond, prefix+"q").Result(); err != redis.Nil {
		t.Fatalf("BLPOP timeout: %v", err)
	}
}

func TestACLUserWithUsername(t *testing.T) {
	admin, ctx := newClient(t)
	const user = "clients-go"
	if err := admin.Do(ctx, "ACL", "SETUSER", user, "reset", "on", ">secret", "~"+prefix+"acl:*",
		"+get", "+set", "+ping").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Do(ctx, "ACL", "DELUSER", user) })
	rdb := redis.NewClient(&redis.Options{Addr: serverAddr(), Username: user, Password: "secret"})
	defer rdb.Close()
	if err := rdb.Set(ctx, prefix+"acl:k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := rdb.Get(ctx, prefix+"acl:k").Result(); got != "v" || err != nil {
		t.Fatalf("GET returned %q, %v", got, err)
	}
	if err := rdb.Del(ctx, prefix+"acl:k").Err(); err == nil ||
		err.Error() != "NOPERM this user has no permissions to run the 'del' command" {
		t.Fatalf("DEL: got %v", err)
	}
	if err := rdb.Get(ctx, "outside").Err(); err == nil ||
		err.Error() != "NOPERM this user has no permissions to access one of the keys used as arguments" {
		t.Fatalf("GET outside the key pattern: got %v", err)
	}
}
