package org.pixelflight.spark;

import java.io.File;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.HashMap;
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
 * executor's working directory, where the Python client finds it (the
 * executor's Python workers run in that directory), and in its files
 * directory (SparkFiles' root) when that is another one: the Python workers
 * of a Spark Connect session run in a directory of the session's own in
 * there, and the client looks one level up. In shutdown it sends SIGTERM,
 * waits for the drain, then kills.
 *
 * <p>The sidecar gets the executor's cores (spark.executor.cores, else the
 * --cores its cluster manager gave the executor) as its --workers, and the
 * executor's GPU addresses (its "gpu" resource; in local mode the driver's)
 * as CUDA_VISIBLE_DEVICES, with CUDA_DEVICE_ORDER=PCI_BUS_ID (the addresses
 * are NVML's indices, in PCI bus order) unless the executor's environment
 * sets it. Its log is pixelflight-&lt;executor id&gt;.log in the executor's
 * working directory, on YARN in the container's log directory
 * (spark.yarn.app.container.log.dir), which YARN keeps and aggregates.
 *
 * <p>In between it supervises the sidecar: if it exits while the executor
 * is not shutting down (killed, crashed, stopped by someone else), the exit
 * status and the last lines of its log go to the executor's stderr and it
 * is started again on the same socket, after 0.2 s, doubling for each
 * restart still inside the restart window, up to 5 s. The Python client
 * retries meanwhile (PIXELFLIGHT_RETRY_SECONDS) and sends again what was not
 * answered. After maxRestarts restarts within the window it is left down:
 * the executor keeps running and tasks that use the sidecar fail with an
 * error naming the endpoint and the cause.
 *
 * <table>
 * <caption>Settings</caption>
 * <tr><td>spark.pixelflight.binary</td><td>pixelflight</td><td>the sidecar binary: a file shipped with
 *   --files / spark.yarn.dist.files (by name), a file in the working directory or beside the workers'
 *   Python (see {@link #driverConf}; else spark.executorEnv.PYSPARK_PYTHON or the executor's
 *   PYSPARK_PYTHON: where pip installed the wheel), a path, or a command on PATH</td></tr>
 * <tr><td>spark.pixelflight.args</td><td></td><td>extra `serve` flags, space-separated</td></tr>
 * <tr><td>spark.pixelflight.socketDir</td><td>the executor's working directory</td><td>where the socket
 *   goes, relative to the working directory (java.io.tmpdir when the path would be too long for a Unix
 *   socket)</td></tr>
 * <tr><td>spark.pixelflight.startTimeout</td><td>30s</td><td>how long to wait for the sidecar</td></tr>
 * <tr><td>spark.pixelflight.stopTimeout</td><td>30s</td><td>how long the sidecar may drain on shutdown</td></tr>
 * <tr><td>spark.pixelflight.metricsListen</td><td>the sidecar's (127.0.0.1:9477)</td><td>host:port of the
 *   sidecar's Prometheus metrics; empty turns them off</td></tr>
 * <tr><td>spark.pixelflight.memoryBudget</td><td>on YARN and Kubernetes, half the executor's memory
 *   overhead; elsewhere the sidecar's own default</td><td>the sidecar's --memory-budget (a size: 512m, 2g);
 *   see {@link #memoryBudget}</td></tr>
 * <tr><td>spark.pixelflight.maxRestarts</td><td>10</td><td>restarts of a sidecar that exited, within
 *   restartWindow; 0: never restart</td></tr>
 * <tr><td>spark.pixelflight.restartWindow</td><td>10min</td><td>the period maxRestarts counts over</td></tr>
 * </table>
 */
final class Sidecar implements ExecutorPlugin {
  static final String ENDPOINT_FILE = "pixelflight.endpoint";
  // Keys of what the driver side tells the executors (their extraConf).
  static final String WORKER_PYTHON = "workerPython";
  static final String DRIVER_GPUS = "driverGpus";
  private static final int MAX_SOCKET_PATH = 100; // sun_path is 108 bytes on Linux
  private static final long MIN_OVERHEAD_MIB = 384; // Spark's least memory overhead
  // What the socket's path adds to its base directory: "/pixelflight-",
  // createTempDirectory's number (up to 20 digits) and "/s.sock".
  private static final int SOCKET_SUFFIX = "/pixelflight-".length() + 20 + "/s.sock".length();
  private static final long FIRST_BACKOFF_MS = 200;
  private static final long MAX_BACKOFF_MS = 5000;

  private final Object lock = new Object();
  private Process process; // guarded by lock
  private boolean stopping; // guarded by lock
  private Thread supervisor;
  private ProcessBuilder builder;
  private List<String> cmd;
  private String executor;
  private Path log;
  private Path socket;
  private Path socketDir;
  private final List<Path> endpointFiles = new ArrayList<>();
  private long startTimeoutMs;
  private long stopTimeoutMs;
  private int maxRestarts;
  private long restartWindowMs;
  private final java.util.concurrent.atomic.AtomicInteger restartsSoFar = new java.util.concurrent.atomic.AtomicInteger();

  @Override
  public void init(PluginContext ctx, Map<String, String> extraConf) {
    SparkConf conf = ctx.conf();
    Map<String, String> fromDriver = extraConf == null ? Map.of() : extraConf;
    String binary = resolveBinary(conf.get("spark.pixelflight.binary", "pixelflight"),
        workerPython(conf, fromDriver));
    startTimeoutMs = conf.getTimeAsMs("spark.pixelflight.startTimeout", "30s");
    stopTimeoutMs = conf.getTimeAsMs("spark.pixelflight.stopTimeout", "30s");
    maxRestarts = conf.getInt("spark.pixelflight.maxRestarts", 10);
    restartWindowMs = conf.getTimeAsMs("spark.pixelflight.restartWindow", "10min");
    executor = ctx.executorID();
    Process first;
    try {
      Path cwd = new File(".").getCanonicalFile().toPath();
      Path base = cwd.resolve(conf.get("spark.pixelflight.socketDir", "").trim()).normalize(); // absolute
      if (base.toString().length() + SOCKET_SUFFIX > MAX_SOCKET_PATH) {
        base = Path.of(System.getProperty("java.io.tmpdir"));
      }
      if (base.toString().length() + SOCKET_SUFFIX > MAX_SOCKET_PATH) {
        base = Path.of("/tmp");
      }
      socketDir = Files.createTempDirectory(base, "pixelflight-");
      socket = socketDir.resolve("s.sock");
      log = logDir(cwd).resolve("pixelflight-" + sanitize(executor) + ".log");

      cmd = new ArrayList<>(List.of(binary, "serve", "--listen", "grpc+unix://" + socket, "--exit-with-parent"));
      // The sidecar's CPU lanes: the executor's cores, so that several
      // executors on a node do not each take all of its CPUs. A --workers in
      // spark.pixelflight.args (later on the command line) or
      // PIXELFLIGHT_WORKERS in the executor's environment wins.
      String cores = executorCores(conf);
      if (!cores.isEmpty() && System.getenv("PIXELFLIGHT_WORKERS") == null) {
        cmd.add("--workers=" + cores);
      }
      if (conf.contains("spark.pixelflight.metricsListen")) {
        cmd.add("--metrics-listen=" + conf.get("spark.pixelflight.metricsListen").trim());
      }
      // Its Prometheus series name the application and executor they come from.
      cmd.add("--metrics-labels=spark_app_id=" + labelValue(conf.get("spark.app.id", "")) + ",spark_executor_id="
          + labelValue(executor));
      long budget = memoryBudget(conf);
      if (budget > 0) {
        cmd.add("--memory-budget=" + budget);
      }
      String args = conf.get("spark.pixelflight.args", "").trim();
      if (!args.isEmpty()) {
        cmd.addAll(Arrays.asList(args.split("\\s+")));
      }
      builder = new ProcessBuilder(cmd).redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.to(log.toFile()));
      // The executor's GPUs; in local mode (no resources of its own) the driver's.
      ResourceInformation gpus = ctx.resources().get("gpu");
      String devices = gpus != null ? String.join(",", gpus.addresses()) : fromDriver.get(DRIVER_GPUS);
      if (devices != null) {
        builder.environment().put("CUDA_VISIBLE_DEVICES", devices);
        // Spark's addresses are NVML's indices, which follow PCI bus order;
        // CUDA's own default order (fastest first) may differ on mixed GPUs.
        builder.environment().putIfAbsent("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
      }
      first = start();
      builder.redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())); // restarts keep the earlier lines
      waitForSocket(first);

      writeEndpoint(cwd);
      Path files = filesDir();
      if (files != null && !files.equals(cwd)) {
        writeEndpoint(files);
      }
      note("sidecar started: grpc+unix://" + socket + ", its log " + log + ", its metrics at "
          + (conf.contains("spark.pixelflight.metricsListen") ? "'" + conf.get("spark.pixelflight.metricsListen").trim()
              + "'" : "serve's default (127.0.0.1:9477)") + " (spark.pixelflight.metricsListen)");
    } catch (IOException | InterruptedException e) {
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      shutdown();
      throw new IllegalStateException("pixelflight: cannot start the sidecar for executor " + executor + ": " + e
          + lastLines(), e);
    }
    String env = conf.get("spark.executorEnv.PIXELFLIGHT_ENDPOINT", System.getenv("PIXELFLIGHT_ENDPOINT"));
    if (env != null && !env.isEmpty()) {
      note("PIXELFLIGHT_ENDPOINT is set in the executor's environment (" + env + "; spark.executorEnv."
          + "PIXELFLIGHT_ENDPOINT?): the tasks' Python clients and the data source use it, not this plugin's sidecar"
          + " at grpc+unix://" + socket + "; unset it to use the plugin's");
    }
    // In Spark's metrics system (its sinks, JMX), as plugin.<this plugin's class>.<name>.
    ctx.metricRegistry().register("sidecarUp", (com.codahale.metrics.Gauge<Integer>) () -> {
      synchronized (lock) {
        return process != null && process.isAlive() ? 1 : 0;
      }
    });
    ctx.metricRegistry().register("sidecarRestarts", (com.codahale.metrics.Gauge<Integer>) restartsSoFar::get);
    supervisor = new Thread(() -> supervise(first), "pixelflight-supervisor");
    supervisor.setDaemon(true);
    supervisor.start();
  }

  /** Starts the sidecar, unless the executor is shutting down (then null). */
  private Process start() throws IOException {
    synchronized (lock) {
      if (stopping) {
        return null;
      }
      process = builder.start();
      return process;
    }
  }

  /** Restarts the sidecar each time it exits, until shutdown or maxRestarts within restartWindow. */
  private void supervise(Process p) {
    Deque<Long> restarts = new ArrayDeque<>();
    String why = null;
    while (true) {
      try {
        if (p != null) {
          why = "exited with status " + status(p.waitFor());
        }
        long now = System.nanoTime();
        while (!restarts.isEmpty() && now - restarts.peekFirst() > TimeUnit.MILLISECONDS.toNanos(restartWindowMs)) {
          restarts.removeFirst();
        }
        synchronized (lock) {
          if (stopping) {
            return;
          }
        }
        if (restarts.size() >= maxRestarts) {
          note("the sidecar " + why + "; not restarting it: it was restarted " + restarts.size() + " times within "
              + restartWindowMs / 1000 + " s (spark.pixelflight.maxRestarts, spark.pixelflight.restartWindow). "
              + "Tasks of this executor that use it will fail." + lastLines());
          return;
        }
        long delay = Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS << Math.min(restarts.size(), 10));
        note("the sidecar " + why + "; restarting it on " + socket + " in " + delay + " ms (restart "
            + (restarts.size() + 1) + " of at most " + maxRestarts + " within " + restartWindowMs / 1000 + " s)"
            + lastLines());
        restarts.addLast(now);
        restartsSoFar.incrementAndGet();
        Thread.sleep(delay);
        try {
          p = start();
        } catch (IOException e) {
          p = null;
          why = "could not be started again: " + e.getMessage();
          continue;
        }
        if (p == null) {
          return; // shutting down
        }
        try {
          waitForSocket(p);
          note("the sidecar serves again on " + socket + " (pid " + p.pid() + ")");
        } catch (IOException e) {
          note(e.getMessage());
          p.destroyForcibly();
        }
      } catch (InterruptedException e) {
        return; // shutdown
      }
    }
  }

  private static String status(int code) {
    // Java reports death by signal N as 128 + N.
    return code > 128 ? code + " (signal " + (code - 128) + ")" : Integer.toString(code);
  }

  private void note(String message) {
    System.err.println("pixelflight plugin, executor " + executor + ": " + message);
  }

  private void waitForSocket(Process p) throws IOException, InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(startTimeoutMs);
    while (true) {
      if (!p.isAlive()) {
        throw new IOException("`" + String.join(" ", cmd) + "` exited with status " + status(p.exitValue()));
      }
      if (Files.exists(socket)) {
        try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
          ch.connect(UnixDomainSocketAddress.of(socket));
          return;
        } catch (IOException notYet) {
          // bound but not listening yet, or a dead sidecar's socket
        }
      }
      if (System.nanoTime() > deadline) {
        throw new IOException("`" + String.join(" ", cmd) + "` did not listen on " + socket + " within "
            + startTimeoutMs + " ms (spark.pixelflight.startTimeout)");
      }
      Thread.sleep(50);
    }
  }

  @Override
  public void shutdown() {
    Process p;
    synchronized (lock) {
      stopping = true;
      p = process;
    }
    if (supervisor != null) {
      supervisor.interrupt();
    }
    for (Path f : endpointFiles) {
      f.toFile().delete();
    }
    if (p != null && p.isAlive()) {
      p.destroy(); // SIGTERM: the sidecar drains open streams
      try {
        if (!p.waitFor(stopTimeoutMs, TimeUnit.MILLISECONDS)) {
          p.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
        }
      } catch (InterruptedException e) {
        p.destroyForcibly();
        Thread.currentThread().interrupt();
      }
    }
    if (socketDir != null) {
      socketDir.resolve("s.sock").toFile().delete();
      socketDir.toFile().delete();
    }
  }

  /** Writes the endpoint to {@value #ENDPOINT_FILE} in dir, atomically. */
  private void writeEndpoint(Path dir) throws IOException {
    Path file = dir.resolve(ENDPOINT_FILE);
    Path tmp = dir.resolve(ENDPOINT_FILE + ".tmp");
    Files.writeString(tmp, "grpc+unix://" + socket + "\n", StandardCharsets.UTF_8);
    Files.move(tmp, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING,
        java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    endpointFiles.add(file);
  }

  /** The executor's files directory (SparkFiles' root), or null without a SparkEnv. */
  private static Path filesDir() throws IOException {
    try {
      return new File(SparkFiles.getRootDirectory()).getCanonicalFile().toPath();
    } catch (RuntimeException noSparkEnv) {
      return null;
    }
  }

  /**
   * The sidecar's --memory-budget in bytes, 0 for its own default (the
   * memory cgroup's limit, else the machine's): spark.pixelflight.memoryBudget
   * when set; on YARN and Kubernetes, whose containers hold the executor's
   * heap and its memory overhead, half the overhead (the rest for the
   * Python workers and the JVM's own), as Spark sizes it:
   * spark.executor.memoryOverhead, else spark.executor.memoryOverheadFactor
   * (0.10) of spark.executor.memory, at least 384 MiB.
   */
  static long memoryBudget(SparkConf conf) {
    if (conf.contains("spark.pixelflight.memoryBudget")) {
      return conf.getSizeAsBytes("spark.pixelflight.memoryBudget");
    }
    String master = conf.get("spark.master", "");
    if (!master.startsWith("yarn") && !master.startsWith("k8s://")) {
      return 0;
    }
    long overheadMiB;
    if (conf.contains("spark.executor.memoryOverhead")) {
      overheadMiB = conf.getSizeAsMb("spark.executor.memoryOverhead");
    } else {
      long memoryMiB = conf.getSizeAsMb("spark.executor.memory", "1g");
      double factor = conf.getDouble("spark.executor.memoryOverheadFactor", 0.10);
      overheadMiB = Math.max((long) (memoryMiB * factor), MIN_OVERHEAD_MIB);
    }
    return (overheadMiB << 20) / 2;
  }

  /**
   * The executor's cores: spark.executor.cores when set, else the --cores
   * its cluster manager started it with (standalone gives an executor all
   * of its worker's cores when the setting is unset); empty in local mode.
   */
  static String executorCores(SparkConf conf) {
    String cores = conf.get("spark.executor.cores", "").trim();
    if (!cores.isEmpty()) {
      return cores;
    }
    String[] args = System.getProperty("sun.java.command", "").split("\\s+");
    if (!args[0].endsWith("ExecutorBackend")) { // the driver (local mode): its --cores are the user's
      return "";
    }
    for (int i = 1; i + 1 < args.length; i++) {
      if (args[i].equals("--cores") && args[i + 1].matches("[1-9][0-9]*")) {
        return args[i + 1];
      }
    }
    return "";
  }

  /**
   * Where the sidecar's log goes: on YARN the container's log directory,
   * which YARN keeps (and aggregates) after the container's working
   * directory is deleted; elsewhere the working directory.
   */
  private static Path logDir(Path cwd) {
    String yarn = System.getProperty("spark.yarn.app.container.log.dir", "").trim();
    return yarn.isEmpty() ? cwd : Path.of(yarn);
  }

  /**
   * What the driver side tells the executors (their extraConf), computed in
   * the driver's JVM. {@value #WORKER_PYTHON}: the Python that PySpark's
   * workers run, when the driver names one. PySpark ships the Python
   * driver's PYSPARK_PYTHON with each task (python3 when unset) and the
   * workers run that, whatever the executors' environment says;
   * spark-submit (PythonRunner, or YARN's and Kubernetes' cluster mode)
   * sets it from spark.pyspark.python, which wins there, while a driver
   * started by `python` itself (it started this JVM, which inherited its
   * environment: _PYSPARK_DRIVER_CONN_INFO_PATH set) ignores
   * spark.pyspark.python. {@value #DRIVER_GPUS}: in local mode, where the
   * executor has no resources of its own, the driver's "gpu" addresses.
   */
  static Map<String, String> driverConf(SparkConf conf, boolean local, Map<String, ResourceInformation> resources) {
    Map<String, String> extra = new HashMap<>();
    String python = System.getenv("_PYSPARK_DRIVER_CONN_INFO_PATH") != null
        ? "" : conf.get("spark.pyspark.python", "").trim();
    if (python.isEmpty() && System.getenv("PYSPARK_PYTHON") != null) {
      python = System.getenv("PYSPARK_PYTHON").trim();
    }
    if (!python.isEmpty()) {
      extra.put(WORKER_PYTHON, python);
    }
    ResourceInformation gpus = local && resources != null ? resources.get("gpu") : null;
    if (gpus != null) {
      extra.put(DRIVER_GPUS, String.join(",", gpus.addresses()));
    }
    return extra;
  }

  /**
   * The Python the executor's workers run, as the driver side found it
   * ({@link #driverConf}), else spark.executorEnv.PYSPARK_PYTHON, else the
   * executor's PYSPARK_PYTHON (a driver that names no Python, or none at
   * all: a JVM application), or null.
   */
  private static String workerPython(SparkConf conf, Map<String, String> fromDriver) {
    String python = fromDriver.get(WORKER_PYTHON); // never empty
    if (python == null) {
      python = conf.get("spark.executorEnv.PYSPARK_PYTHON", "").trim();
    }
    return python.isEmpty() ? System.getenv("PYSPARK_PYTHON") : python;
  }

  /**
   * A file shipped to the executor by that name, else one of that name in
   * the working directory, else one beside the workers' Python (where `pip
   * install` of the wheel put it), else the value as a path or a command
   * on PATH.
   */
  static String resolveBinary(String name, String python) {
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
      if (python != null && python.contains("/")) {
        File beside = new File(new File(python).getParentFile(), name); // the venv's bin/, links unresolved
        if (beside.isFile() && beside.canExecute()) {
          return beside.getAbsolutePath();
        }
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

  /** s for --metrics-labels: its commas and equals signs, which separate the pairs, as _. */
  private static String labelValue(String s) {
    return s == null ? "" : s.replaceAll("[,=]", "_");
  }

  private static String sanitize(String s) {
    return s.replaceAll("[^A-Za-z0-9_.-]", "_");
  }
}
