package org.pixelflight.spark;

import java.io.File;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.spark.SparkConf;
import org.apache.spark.SparkFiles;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.resource.ResourceInformation;

/**
 * The executor side of {@link PixelflightPlugin}: in init it starts
 * `pixelflight serve` on a Unix socket, waits until the socket accepts
 * connections and writes the endpoint to {@value #ENDPOINT_FILE} in the
 * executor's working directory, where the Python client (which the
 * executor's Python workers run in that directory) finds it. In shutdown it
 * sends SIGTERM, waits for the drain, then kills.
 *
 * <table>
 * <caption>Settings</caption>
 * <tr><td>spark.pixelflight.binary</td><td>pixelflight</td><td>the sidecar binary: a file shipped with
 *   --files / spark.yarn.dist.files (by name), a path, or a command on PATH</td></tr>
 * <tr><td>spark.pixelflight.args</td><td></td><td>extra `serve` flags, space-separated</td></tr>
 * <tr><td>spark.pixelflight.socketDir</td><td>the executor's working directory</td><td>where the socket
 *   goes (java.io.tmpdir when the path would be too long for a Unix socket)</td></tr>
 * <tr><td>spark.pixelflight.startTimeout</td><td>30s</td><td>how long to wait for the sidecar</td></tr>
 * <tr><td>spark.pixelflight.stopTimeout</td><td>30s</td><td>how long the sidecar may drain on shutdown</td></tr>
 * <tr><td>spark.pixelflight.metricsListen</td><td>the sidecar's (127.0.0.1:9477)</td><td>host:port of the
 *   sidecar's Prometheus metrics; empty turns them off</td></tr>
 * </table>
 */
final class Sidecar implements ExecutorPlugin {
  static final String ENDPOINT_FILE = "pixelflight.endpoint";
  private static final int MAX_SOCKET_PATH = 100; // sun_path is 108 bytes on Linux

  private Process process;
  private Path log;
  private Path socketDir;
  private Path endpointFile;
  private long stopTimeoutMs;

  @Override
  public void init(PluginContext ctx, Map<String, String> extraConf) {
    SparkConf conf = ctx.conf();
    String binary = resolveBinary(conf.get("spark.pixelflight.binary", "pixelflight"));
    long startTimeoutMs = conf.getTimeAsMs("spark.pixelflight.startTimeout", "30s");
    stopTimeoutMs = conf.getTimeAsMs("spark.pixelflight.stopTimeout", "30s");
    String executor = ctx.executorID();
    try {
      Path cwd = new File(".").getCanonicalFile().toPath();
      Path base = Path.of(conf.get("spark.pixelflight.socketDir", cwd.toString()));
      if (base.toString().length() + 30 > MAX_SOCKET_PATH) {
        base = Path.of(System.getProperty("java.io.tmpdir"));
      }
      if (base.toString().length() + 30 > MAX_SOCKET_PATH) {
        base = Path.of("/tmp");
      }
      socketDir = Files.createTempDirectory(base, "pixelflight-");
      Path socket = socketDir.resolve("s.sock");
      log = cwd.resolve("pixelflight-" + sanitize(executor) + ".log");

      List<String> cmd = new ArrayList<>(List.of(binary, "serve", "--listen", "grpc+unix://" + socket,
          "--exit-with-parent"));
      if (conf.contains("spark.pixelflight.metricsListen")) {
        cmd.add("--metrics-listen=" + conf.get("spark.pixelflight.metricsListen").trim());
      }
      String args = conf.get("spark.pixelflight.args", "").trim();
      if (!args.isEmpty()) {
        cmd.addAll(Arrays.asList(args.split("\\s+")));
      }
      ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.to(log.toFile()));
      ResourceInformation gpus = ctx.resources().get("gpu");
      if (gpus != null) {
        pb.environment().put("CUDA_VISIBLE_DEVICES", String.join(",", gpus.addresses()));
      }
      process = pb.start();
      waitForSocket(socket, startTimeoutMs, cmd);

      endpointFile = cwd.resolve(ENDPOINT_FILE);
      Path tmp = cwd.resolve(ENDPOINT_FILE + ".tmp");
      Files.writeString(tmp, "grpc+unix://" + socket + "\n", StandardCharsets.UTF_8);
      Files.move(tmp, endpointFile, java.nio.file.StandardCopyOption.REPLACE_EXISTING,
          java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      shutdown();
      throw new IllegalStateException("pixelflight: cannot start the sidecar for executor " + executor + ": " + e
          + lastLines(), e);
    }
  }

  private void waitForSocket(Path socket, long timeoutMs, List<String> cmd) throws IOException {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    while (true) {
      if (!process.isAlive()) {
        throw new IOException("`" + String.join(" ", cmd) + "` exited with status " + process.exitValue());
      }
      if (Files.exists(socket)) {
        try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
          ch.connect(UnixDomainSocketAddress.of(socket));
          return;
        } catch (IOException notYet) {
          // bound but not listening yet
        }
      }
      if (System.nanoTime() > deadline) {
        throw new IOException("`" + String.join(" ", cmd) + "` did not listen on " + socket + " within "
            + timeoutMs + " ms (spark.pixelflight.startTimeout)");
      }
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted while waiting for the sidecar", e);
      }
    }
  }

  @Override
  public void shutdown() {
    if (endpointFile != null) {
      endpointFile.toFile().delete();
    }
    if (process != null && process.isAlive()) {
      process.destroy(); // SIGTERM: the sidecar drains open streams
      try {
        if (!process.waitFor(stopTimeoutMs, TimeUnit.MILLISECONDS)) {
          process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
        }
      } catch (InterruptedException e) {
        process.destroyForcibly();
        Thread.currentThread().interrupt();
      }
    }
    if (socketDir != null) {
      socketDir.resolve("s.sock").toFile().delete();
      socketDir.toFile().delete();
    }
  }

  /** A file shipped to the executor by that name, else the value as a path or a command on PATH. */
  static String resolveBinary(String name) {
    if (!name.contains("/")) {
      try {
        File shipped = new File(SparkFiles.get(name));
        if (shipped.isFile()) {
          shipped.setExecutable(true);
          return shipped.getAbsolutePath();
        }
      } catch (RuntimeException noSparkFiles) {
        // no SparkEnv yet: fall through
      }
      File local = new File(name);
      if (local.isFile()) {
        local.setExecutable(true);
        return local.getAbsolutePath();
      }
    }
    return name;
  }

  private String lastLines() {
    if (log == null || !Files.exists(log)) {
      return "";
    }
    try {
      List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
      return "\nlast lines of " + log + ":\n"
          + String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
    } catch (IOException e) {
      return "";
    }
  }

  private static String sanitize(String s) {
    return s.replaceAll("[^A-Za-z0-9_.-]", "_");
  }
}
