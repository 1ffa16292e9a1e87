package dev.blinkdb.clients;

import java.io.IOException;
import java.util.Arrays;

/** Where the server under test is (BLINKDB_HOST, BLINKDB_PORT) and how to restart it. */
final class ServerUnderTest {
  private ServerUnderTest() {}

  static String host() {
    return System.getenv().getOrDefault("BLINKDB_HOST", "127.0.0.1");
  }

  static int port() {
    return Integer.parseInt(System.getenv().getOrDefault("BLINKDB_PORT", "6379"));
  }

  /** Runs BLINKDB_RESTART_CMD, split on whitespace, and fails unless it exits 0. */
  static void restart() {
    String command = System.getenv().getOrDefault("BLINKDB_RESTART_CMD", "").trim();
    if (command.isEmpty()) {
      throw new IllegalStateException("BLINKDB_RESTART_CMD is not set; the reconnection test needs it");
    }
    try {
      Process process = new ProcessBuilder(Arrays.asList(command.split("\\s+"))).inheritIO().start();
      int status = process.waitFor();
      if (status != 0) {
        throw new IllegalStateException("restart command exited " + status);
      }
    } catch (IOException e) {
      throw new IllegalStateException("cannot run restart command", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while restarting", e);
    }
  }
}
