package dev.blinkdb.clients;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.JedisPooled;
import redis.clients.jedis.PipelineBase;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.Response;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;

/** Jedis 5 {@code JedisPooled} with default settings (RESP2) against BLINKDB_HOST/BLINKDB_PORT. */
class JedisCompatibilityTest {
  private static final String PREFIX = "clients:java:";

  private JedisPooled jedis;

  @BeforeEach
  void connect() {
    jedis = new JedisPooled(ServerUnderTest.host(), ServerUnderTest.port());
  }

  @AfterEach
  void cleanUp() {
    var keys = jedis.keys(PREFIX + "*");
    if (!keys.isEmpty()) {
      jedis.del(keys.toArray(new String[0]));
    }
    jedis.close();
  }

  private static byte[] key(String name) {
    return (PREFIX + name).getBytes(StandardCharsets.UTF_8);
  }

  private static byte[] allBytesValue() {
    var out = new ByteArrayOutputStream();
    for (int b = 0; b < 256; b++) {
      out.write(b);
    }
    out.writeBytes("\r\n\0\r\n$-1\r\n".getBytes(StandardCharsets.ISO_8859_1));
    for (int b = 0; b < 256; b++) {
      out.write(b);
    }
    return out.toByteArray();
  }

  @Test
  void transactionsAndWatch() {
    try (var tx = jedis.multi()) {
      tx.set(PREFIX + "tx", "10");
      tx.incr(PREFIX + "tx");
      assertEquals(List.of("OK", 11L), tx.exec());
    }
    try (var conn = new redis.clients.jedis.Jedis(ServerUnderTest.host(), ServerUnderTest.port());
        var other = new redis.clients.jedis.Jedis(ServerUnderTest.host(), ServerUnderTest.port())) {
      conn.watch(PREFIX + "tx");
      other.set(PREFIX + "tx", "changed");
      var tx = conn.multi();
      tx.set(PREFIX + "tx", "mine");
      assertNull(tx.exec());
    }
    assertEquals("changed", jedis.get(PREFIX + "tx"));
  }

  @Test
  void jedisPubSubReceivesMessagesInOrder() throws Exception {
    String channel = PREFIX + "news";
    var received = new java.util.concurrent.CopyOnWriteArrayList<String>();
    var patterned = new java.util.concurrent.CopyOnWriteArrayList<String>();
    var subscribed = new java.util.concurrent.CountDownLatch(2);
    var done = new java.util.concurrent.CountDownLatch(1);
    var listener =
        new redis.clients.jedis.JedisPubSub() {
          @Override
          public void onSubscribe(String ch, int count) {
            subscribed.countDown();
          }

          @Override
          public void onPSubscribe(String pattern, int count) {
            subscribed.countDown();
          }

          @Override
          public void onMessage(String ch, String message) {
            received.add(message);
            if (received.size() == 101) {
              done.countDown();
            }
          }

          @Override
          public void onPMessage(String pattern, String ch, String message) {
            patterned.add(pattern + " " + ch + " " + message);
          }
        };
    try (var sub = new redis.clients.jedis.Jedis(ServerUnderTest.host(), ServerUnderTest.port())) {
      var thread =
          new Thread(
              () -> {
                // subscribe() blocks until every subscription is gone; psubscribe is added from
                // this thread once the first confirmation arrived.
                sub.subscribe(listener, channel);
              });
      thread.start();
      while (subscribed.getCount() == 2) {
        Thread.sleep(10);
      }
      listener.psubscribe(PREFIX + "n*");
      assertTrue(subscribed.await(5, java.util.concurrent.TimeUnit.SECONDS));
      assertEquals(2L, jedis.publish(channel, "hello"));
      for (int i = 0; i < 100; i++) {
        jedis.publish(channel, String.valueOf(i));
      }
      assertTrue(done.await(5, java.util.concurrent.TimeUnit.SECONDS), "messages: " + received.size());
      var want = new ArrayList<String>();
      want.add("hello");
      for (int i = 0; i < 100; i++) {
        want.add(String.valueOf(i));
      }
      assertEquals(want, received);
      assertEquals(PREFIX + "n* " + channel + " hello", patterned.get(0));
      try (var plain = new redis.clients.jedis.Jedis(ServerUnderTest.host(), ServerUnderTest.port())) {
        assertEquals(Map.of(channel, 1L), plain.pubsubNumSub(channel));
      }
      listener.unsubscribe();
      listener.punsubscribe();
      thread.join(5000);
      assertFalse(thread.isAlive());
    }
  }

  @Test
  void binaryValuesRoundTrip() {
    byte[] value = allBytesValue();
    assertEquals("OK", jedis.set(key("bin"), value));
    assertArrayEquals(value, jedis.get(key("bin")));
    byte[] binaryKey = (PREFIX + "\0\r\nkey\u00ff").getBytes(StandardCharsets.ISO_8859_1);
    jedis.set(binaryKey, "\r\n".getBytes(StandardCharsets.ISO_8859_1));
    assertArrayEquals("\r\n".getBytes(StandardCharsets.ISO_8859_1), jedis.get(binaryKey));
  }

  @Test
  void msetMgetEveryByte() {
    var keysAndValues = new ArrayList<byte[]>();
    var keys = new ArrayList<byte[]>();
    for (int b = 0; b < 256; b++) {
      keys.add(key("byte:" + b));
      keysAndValues.add(key("byte:" + b));
      keysAndValues.add(new byte[] {(byte) b});
    }
    assertEquals("OK", jedis.mset(keysAndValues.toArray(new byte[0][])));
    keys.add(key("missing"));
    List<byte[]> values = jedis.mget(keys.toArray(new byte[0][]));
    for (int b = 0; b < 256; b++) {
      assertArrayEquals(new byte[] {(byte) b}, values.get(b), "byte " + b);
    }
    assertNull(values.get(256));
  }

  @Test
  void expireTtlAndPexpire() throws InterruptedException {
    jedis.set(PREFIX + "ttl", "v");
    assertEquals(-1, jedis.ttl(PREFIX + "ttl"));
    assertEquals(-2, jedis.ttl(PREFIX + "never-set"));
    assertEquals(1, jedis.expire(PREFIX + "ttl", 100));
    long ttl = jedis.ttl(PREFIX + "ttl");
    assertTrue(ttl >= 99 && ttl <= 100, "TTL " + ttl);
    jedis.set(PREFIX + "short", "v");
    assertEquals(1, jedis.pexpire(PREFIX + "short", 100));
    Thread.sleep(250);
    assertNull(jedis.get(PREFIX + "short"));
  }

  @Test
  void pipelineOf1000Commands() {
    var replies = new ArrayList<Response<Long>>();
    try (PipelineBase pipeline = jedis.pipelined()) {
      for (int i = 0; i < 1000; i++) {
        replies.add(pipeline.incr(PREFIX + "pipe:" + (i % 10)));
      }
      pipeline.sync();
    }
    for (int i = 0; i < 1000; i++) {
      assertEquals(i / 10 + 1, replies.get(i).get(), "reply " + i);
    }
  }

  @Test
  void incrAndErrors() {
    assertEquals(1, jedis.incr(PREFIX + "n"));
    assertEquals(-4, jedis.incrBy(PREFIX + "n", -5));
    jedis.set(PREFIX + "text", "abc");
    var notInteger = assertThrows(JedisDataException.class, () -> jedis.incr(PREFIX + "text"));
    assertEquals("ERR value is not an integer or out of range", notInteger.getMessage());
    var arity = assertThrows(JedisDataException.class, () -> jedis.sendCommand(Protocol.Command.GET));
    assertEquals("ERR wrong number of arguments for 'get' command", arity.getMessage());
    assertEquals("abc", jedis.get(PREFIX + "text"));
  }

  @Test
  void aclUserWithUsernameAndPassword() {
    String user = "clients-java";
    jedis.sendCommand(
        Protocol.Command.ACL, "SETUSER", user, "reset", "on", ">secret", "~" + PREFIX + "acl:*", "+get", "+set",
        "+ping");
    try (var limited = new JedisPooled(ServerUnderTest.host(), ServerUnderTest.port(), user, "secret")) {
      assertEquals("OK", limited.set(PREFIX + "acl:k", "v"));
      assertEquals("v", limited.get(PREFIX + "acl:k"));
      var del = assertThrows(JedisDataException.class, () -> limited.del(PREFIX + "acl:k"));
      assertEquals("NOPERM this user has no permissions to run the 'del' command", del.getMessage());
      var key = assertThrows(JedisDataException.class, () -> limited.get("outside"));
      assertEquals(
          "NOPERM this user has no permissions to access one of the keys used as arguments", key.getMessage());
    } finally {
      jedis.sendCommand(Protocol.Command.ACL, "DELUSER", user);
    }
  }

  @Test
  void bloomCommandsThroughBfHelpers() {
    String bloom = PREFIX + "bloom";
    assertEquals("OK", jedis.bfReserve(bloom, 0.01, 1000));
    assertTrue(jedis.bfAdd(bloom, "apple"));
    assertFalse(jedis.bfAdd(bloom, "apple"));
    assertTrue(jedis.bfExists(bloom, "apple"));
    assertFalse(jedis.bfExists(bloom, "pear"));
    Map<String, Object> info = jedis.bfInfo(bloom);
    assertEquals(1000L, info.get("Capacity"));
    assertEquals(1L, info.get("Number of filters"));
    assertEquals(1L, info.get("Number of items inserted"));
    assertEquals(2L, info.get("Expansion rate"));
    assertTrue((Long) info.get("Size") > 0, "Size " + info.get("Size"));
    var exists = assertThrows(JedisDataException.class, () -> jedis.bfReserve(bloom, 0.01, 1000));
    assertEquals("ERR item exists", exists.getMessage());
  }

  @Test
  void reconnectsAfterServerRestart() {
    jedis.set(PREFIX + "durable", "kept");
    ServerUnderTest.restart();
    // The pool's idle connection died with the server: Jedis reports that once as a
    // JedisConnectionException and drops the connection; the pool then opens a new one.
    List<Exception> failures = new ArrayList<>();
    String value = null;
    for (int attempt = 0; attempt < 2 && value == null; attempt++) {
      try {
        value = jedis.get(PREFIX + "durable");
      } catch (JedisConnectionException e) {
        failures.add(e);
      }
    }
    assertEquals("kept", value, "failures: " + Arrays.toString(failures.toArray()));
    assertTrue(failures.size() <= 1, "failures: " + failures);
  }
  @Test
  void collectionsRoundTrip() {
    assertEquals(2L, jedis.hset(PREFIX + "h", Map.of("a", "1", "b", "2")));
    assertEquals(Map.of("a", "1", "b", "2"), jedis.hgetAll(PREFIX + "h"));
    assertEquals(42L, jedis.hincrBy(PREFIX + "h", "a", 41));
    assertEquals(3L, jedis.sadd(PREFIX + "s", "x", "y", "3"));
    assertEquals(java.util.Set.of("x", "y", "3"), jedis.smembers(PREFIX + "s"));
    assertEquals(2L, jedis.zadd(PREFIX + "z", Map.of("m1", 1.5, "m2", -2.0)));
    assertEquals(List.of("m2", "m1"), jedis.zrange(PREFIX + "z", 0, -1));
    assertEquals(1.5, jedis.zscore(PREFIX + "z", "m1"));
    assertEquals(3L, jedis.rpush(PREFIX + "l", "a", "b", "c"));
    assertEquals(List.of("a", "b", "c"), jedis.lrange(PREFIX + "l", 0, -1));
    var popped = jedis.blpop(1.0, PREFIX + "none", PREFIX + "l");
    assertEquals(PREFIX + "l", popped.getKey());
    assertEquals("a", popped.getValue());
    assertNull(jedis.blpop(0.05, PREFIX + "empty"));
  }
}
