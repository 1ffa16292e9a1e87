package dev.blinkdb.clients;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.FileInputStream;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.exceptions.JedisConnectionException;

/**
 * Jedis over TLS (ssl=true with an SSLSocketFactory made from run.sh's PEM files) against
 * BLINKDB_TLS_PORT, with and without a client certificate (the server has tls-auth-clients
 * optional); the server's certificate is checked against the CA, its address included.
 */
class JedisTlsTest {
  private static final String DIR = System.getenv().getOrDefault("BLINKDB_TLS_DIR", "");

  private static int tlsPort() {
    return Integer.parseInt(System.getenv().getOrDefault("BLINKDB_TLS_PORT", "0"));
  }

  private static Certificate cert(String name) throws Exception {
    try (InputStream in = new FileInputStream(DIR + "/" + name)) {
      return CertificateFactory.getInstance("X.509").generateCertificate(in);
    }
  }

  private static PrivateKey key(String name) throws Exception {
    String pem = Files.readString(Path.of(DIR, name));
    String body = pem.replaceAll("-----[A-Z ]+-----", "").replaceAll("\\s", "");
    return KeyFactory.getInstance("RSA")
        .generatePrivate(new PKCS8EncodedKeySpec(Base64.getDecoder().decode(body)));
  }

  private static SSLSocketFactory factory(boolean withCert, String ca) throws Exception {
    KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
    trust.load(null, null);
    trust.setCertificateEntry("ca", cert(ca));
    TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    tmf.init(trust);
    KeyManagerFactory kmf = null;
    if (withCert) {
      KeyStore keys = KeyStore.getInstance(KeyStore.getDefaultType());
      keys.load(null, null);
      keys.setKeyEntry("client", key("client.key"), new char[0], new Certificate[] {cert("client.crt")});
      kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
      kmf.init(keys, new char[0]);
    }
    SSLContext ctx = SSLContext.getInstance("TLS");
    ctx.init(kmf == null ? null : kmf.getKeyManagers(), tmf.getTrustManagers(), null);
    return ctx.getSocketFactory();
  }

  private static Jedis connect(boolean withCert, String ca) throws Exception {
    assumeTrue(!DIR.isEmpty(), "BLINKDB_TLS_DIR not set: no TLS server");
    SSLParameters params = new SSLParameters();
    params.setEndpointIdentificationAlgorithm("HTTPS");
    return new Jedis(
        new HostAndPort(ServerUnderTest.host(), tlsPort()),
        DefaultJedisClientConfig.builder()
            .ssl(true)
            .sslSocketFactory(factory(withCert, ca))
            .sslParameters(params)
            .timeoutMillis(10000)
            .build());
  }

  @ParameterizedTest
  @ValueSource(booleans = {true, false})
  void commandsAndPipelineOverTls(boolean withCert) throws Exception {
    try (Jedis jedis = connect(withCert, "ca.crt")) {
      String key = "clients:java:tls:" + withCert;
      assertEquals("PONG", jedis.ping());
      byte[] big = new byte[300000];
      java.util.Arrays.fill(big, (byte) 7);
      Pipeline p = jedis.pipelined();
      for (int i = 0; i < 200; i++) {
        p.set(key + ":" + i, Integer.toString(i));
      }
      p.set((key + ":big").getBytes(), big);
      Response<byte[]> back = p.get((key + ":big").getBytes());
      p.sync();
      assertArrayEquals(big, back.get());
      assertEquals("199", jedis.get(key + ":199"));
      for (int i = 0; i < 200; i++) {
        jedis.del(key + ":" + i);
      }
      jedis.del(key + ":big");
    }
  }

  @Test
  void wrongCaIsRefused() throws Exception {
    assertThrows(JedisConnectionException.class, () -> {
      try (Jedis jedis = connect(true, "client.crt")) {
        jedis.ping();
      }
    });
  }
}
