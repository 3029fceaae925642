package org.pixelflight.spark;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.spark.SparkEnv;

// Bundled and relocated under org.pixelflight.shaded by the shade plugin.
import io.grpc.ManagedChannel;
import org.apache.arrow.flight.CallOption;
import org.apache.arrow.flight.FlightCallHeaders;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightGrpcUtils;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.FlightStatusCode;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.HeaderCallOption;

/**
 * One task's Flight DoExchange with its sidecar, as the Python client's
 * Client.map_batches does it: slices go out as they are made, at most
 * window unanswered; answers come back in order, one per slice or several
 * where a slice's results are larger than the sidecar's result batches
 * (64 MiB), each for the slice's next rows. When the
 * sidecar becomes unavailable (UNAVAILABLE: killed, restarting, draining) it
 * connects again and sends the unanswered slices on a new exchange, for up
 * to retrySeconds from the failure (a sidecar that has never answered this
 * task, for FIRST_CONTACT_SECONDS at most, unless it is the executor
 * plugin's, which the plugin restarts: a wrong endpoint fails in seconds, as
 * with the Python client); other errors (bad params, a refused token, a
 * failing row in strict mode) fail the task at once.
 *
 * <p>The endpoint: the endpoint option, else the executor's
 * PIXELFLIGHT_ENDPOINT, else spark.executorEnv.PIXELFLIGHT_ENDPOINT (which
 * local mode does not put in the JVM's environment, though it does in its
 * Python workers'), else the executor plugin's pixelflight.endpoint file in
 * the working directory, else the default socket (Channels.defaultEndpoint): the
 * order in which the tasks' Python clients (map_images) find theirs, so
 * both use the same sidecar. A token comes from
 * PIXELFLIGHT_TOKEN or PIXELFLIGHT_TOKEN_FILE, as the Python client reads
 * them (the executor's environment, else spark.executorEnv.*: Channels.env);
 * TLS settings, see Channels.
 */
final class SidecarExchange implements AutoCloseable {
  static final String ENV = "PIXELFLIGHT_ENDPOINT";
  private static final Pattern BACKEND = Pattern.compile("\"(\\w+)\":(\\d+)");
  private static final long FIRST_PAUSE_MS = 100;
  private static final double FIRST_CONTACT_SECONDS = 5;
  private static final long MAX_PAUSE_MS = 1000;
  private static final long READY_WAIT_NS = 200_000_000;

  private final BufferAllocator alloc;
  private final ExchangeOptions opts;
  private final String endpoint;
  private final String source;
  private final double retrySeconds;
  private final String retrySource;
  private final CallOption[] callOptions;
  private final FlightDescriptor descriptor;
  private final List<String> want;
  private final Source slices;
  private final Deque<Slice> unsent = new ArrayDeque<>(); // made, not sent on this exchange yet
  private final Deque<Slice> inFlight = new ArrayDeque<>(); // sent, not answered yet
  private boolean more = true;
  private boolean halfClosed; // the exchange was told there are no more slices
  private FlightClient client;
  private ManagedChannel channel; // the executor's shared one (Channels)
  private FlightClient.ExchangeReaderWriter exchange;
  private VectorSchemaRoot sendRoot;
  private Slice answered; // the files of the last answer, closed on the next call
  private int headDone; // rows of the oldest unanswered slice answered already
  private boolean everAnswered; // whether the sidecar has answered this task
  // For the scan's metrics (ScanMetrics): sent again after a restart counts again.
  private long bytesSent; // image bytes sent
  private long bytesReceived; // result buffers received
  private long waitNanos; // time waiting for answers
  private long cpuRows; // rows the sidecar ran on its CPU backend
  private long gpuRows; // and on the others (a GPU's)

  SidecarExchange(BufferAllocator alloc, ExchangeOptions opts, List<String> want, Source slices)
      throws IOException {
    this.alloc = alloc;
    this.opts = opts;
    this.want = want;
    this.slices = slices;
    String[] ep = resolveEndpoint(opts.endpoint);
    endpoint = ep[0];
    source = ep[1];
    String env = Channels.env("PIXELFLIGHT_RETRY_SECONDS");
    if (opts.retrySeconds >= 0) {
      retrySeconds = opts.retrySeconds;
      retrySource = "the retrySeconds option";
    } else if (env != null) {
      retrySeconds = Double.parseDouble(env);
      retrySource = "PIXELFLIGHT_RETRY_SECONDS";
    } else {
      retrySeconds = 60;
      retrySource = "the default";
    }
    String token = token();
    if (token == null) {
      callOptions = new CallOption[0];
    } else {
      FlightCallHeaders h = new FlightCallHeaders();
      h.insert("authorization", "Bearer " + token);
      callOptions = new CallOption[] {new HeaderCallOption(h)};
    }
    descriptor = FlightDescriptor.command(opts.command(want));
    client = connect();
  }

  /** Makes the slices to send, in order. */
  interface Source {
    /** The next slice, or null when there are no more. */
    Slice next() throws IOException;
  }

  /** Returns {endpoint, where it came from}. */
  static String[] resolveEndpoint(String option) throws IOException {
    if (option != null && !option.isEmpty()) {
      return new String[] {option, "the endpoint option"};
    }
    String env = System.getenv(ENV);
    if (env != null && !env.isEmpty()) {
      return new String[] {env, "the executor's environment variable " + ENV};
    }
    SparkEnv spark = SparkEnv.get();
    String conf = spark == null ? null : spark.conf().get("spark.executorEnv." + ENV, null);
    if (conf != null && !conf.isEmpty()) {
      return new String[] {conf, "spark.executorEnv." + ENV};
    }
    Path file = Path.of(Sidecar.ENDPOINT_FILE).toAbsolutePath();
    if (Files.isRegularFile(file)) {
      String found = Files.readString(file, StandardCharsets.UTF_8).trim();
      if (!found.isEmpty()) {
        return new String[] {found, file + " (written by the executor plugin)"};
      }
    }
    return new String[] {Channels.defaultEndpoint(),
        "the default (no endpoint option, no " + ENV + ", no " + Sidecar.ENDPOINT_FILE + ")"};
  }

  private static String token() throws IOException {
    String token = Channels.env("PIXELFLIGHT_TOKEN");
    String from = "PIXELFLIGHT_TOKEN";
    if (token == null || token.isEmpty()) {
      String file = Channels.env("PIXELFLIGHT_TOKEN_FILE");
      if (file == null) {
        return null;
      }
      from = "PIXELFLIGHT_TOKEN_FILE=" + file;
      token = Files.readString(Path.of(file), StandardCharsets.US_ASCII);
    }
    token = token.strip();
    if (token.isEmpty() || !token.chars().allMatch(c -> c >= '!' && c <= '~')) {
      throw new IOException("pixelflight: the bearer token from " + from
          + " must be printable ASCII without spaces, and not empty");
    }
    return token;
  }

  /** A client on the executor's shared channel to the endpoint (see Channels). */
  private FlightClient connect() throws IOException {
    try {
      channel = channel == null ? Channels.get(endpoint) : Channels.replace(endpoint, channel);
    } catch (IOException e) {
      throw new IOException("pixelflight: " + e.getMessage() + " (the endpoint from " + source + ")", e);
    }
    return FlightGrpcUtils.createFlightClientWithSharedChannel(alloc, channel);
  }

  /**
   * The next answer, for {@link #answered()}'s files: valid until the next
   * call. Null when every slice is answered.
   */
  VectorSchemaRoot next() throws IOException, InterruptedException {
    if (answered != null) {
      answered.close();
      answered = null;
    }
    Long down = null; // System.nanoTime() of the failure, while the sidecar has not answered since
    long pause = FIRST_PAUSE_MS;
    while (true) {
      FlightStream reader;
      try {
        // Make slices up to the window, sending each as the stream takes
        // it: gRPC's putNext spins on a CPU while the stream is not ready
        // (the sidecar has not let the last message in yet), so a slice
        // waits here, while the task reads answers, unless nothing is on
        // its way.
        while (true) {
          if (exchange == null && !unsent.isEmpty()) {
            open();
          }
          while (!unsent.isEmpty() && (inFlight.isEmpty() || exchange.getWriter().isReady())) {
            send(unsent.peekFirst(), inFlight.isEmpty() ? headDone : 0);
            inFlight.addLast(unsent.removeFirst());
          }
          if (!more || unsent.size() + inFlight.size() >= opts.window) {
            break;
          }
          Slice s = slices.next();
          if (s == null) {
            more = false;
          } else {
            unsent.addLast(s);
          }
        }
        if (inFlight.isEmpty()) {
          return null;
        }
        if (!more && unsent.isEmpty() && !halfClosed) {
          exchange.getWriter().completed();
          halfClosed = true;
        }
        reader = exchange.getReader();
        long t0 = System.nanoTime();
        boolean got = reader.next();
        waitNanos += System.nanoTime() - t0;
        if (!got) {
          throw new IOException("pixelflight: the sidecar at " + endpoint + " ended the " + opts.op
              + " exchange with " + inFlight.size() + " slices unanswered");
        }
      } catch (FlightRuntimeException e) {
        if (e.status().code() != FlightStatusCode.UNAVAILABLE) {
          String file = strictFailure(e);
          throw new IOException("pixelflight: " + (file == null ? "" : file + ": ") + "the sidecar at " + endpoint
              + " (from " + source + ") failed the " + opts.op + " exchange: " + e.getMessage(), e);
        }
        closeExchange();
        long now = System.nanoTime();
        double patience = patience();
        if (down == null) {
          down = now;
          if (patience > 0) {
            System.err.println("pixelflight: the sidecar at " + endpoint + " is unavailable (" + e.getMessage()
                + "): retrying for up to " + patience + " s, then sending the " + unsent.size()
                + " unanswered slices again");
          }
        }
        double waited = (now - down) / 1e9;
        if (waited >= patience) {
          throw unavailable(e, waited);
        }
        Thread.sleep(Math.min(pause, (long) ((patience - waited) * 1000) + 1));
        pause = Math.min(2 * pause, MAX_PAUSE_MS);
        reconnect();
        continue;
      }
      everAnswered = true;
      if (down != null) {
        System.err.println("pixelflight: the sidecar at " + endpoint + " answers again after "
            + (System.nanoTime() - down) / 1e9 + " s");
      }
      VectorSchemaRoot res = reader.getRoot();
      for (FieldVector f : res.getFieldVectors()) {
        bytesReceived += f.getBufferSize();
      }
      countBackends(reader.getLatestMetadata());
      List<String> got = res.getSchema().getFields().stream().map(f -> f.getName()).toList();
      if (!got.equals(want)) {
        throw new IOException("pixelflight: the sidecar returned columns " + got + " for " + opts.op
            + ", expected " + want + ": do the plugin and sidecar versions differ?");
      }
      Slice head = inFlight.peekFirst();
      int n = res.getRowCount();
      if (headDone + n > head.rows) {
        throw new IOException("pixelflight: the sidecar answered " + n + " rows for the " + (head.rows - headDone)
            + " left of a slice");
      }
      if (headDone == 0 && n == head.rows) {
        answered = inFlight.removeFirst();
      } else {
        answered = head.part(alloc, headDone, n);
        headDone += n;
        if (headDone == head.rows) {
          inFlight.removeFirst().close();
          headDone = 0;
        }
      }
      return res;
    }
  }

  /** Image bytes sent, result bytes received, ms waited for answers, rows on the CPU and on a GPU. */
  long[] counts() {
    return new long[] {bytesSent, bytesReceived, waitNanos / 1_000_000, cpuRows, gpuRows};
  }

  /**
   * Adds up the rows each backend ran, from an answer's app metadata
   * ({"backends": {"cpu": 3, "cuda": 29}}: docs/protocol.md); none on the
   * answers after the first of a batch's.
   */
  private void countBackends(ArrowBuf meta) {
    if (meta == null || meta.readableBytes() == 0) {
      return;
    }
    byte[] b = new byte[(int) meta.readableBytes()];
    meta.getBytes(meta.readerIndex(), b);
    Matcher m = BACKEND.matcher(new String(b, StandardCharsets.UTF_8));
    while (m.find()) {
      long n = Long.parseLong(m.group(2));
      switch (m.group(1)) {
        case "cpu" -> cpuRows += n;
        case "decode", "none" -> { } // rows no backend ran
        default -> gpuRows += n;
      }
    }
  }

  /**
   * The file of a strict-mode failure, or null: the sidecar names the row of
   * the batch that failed in its status's STRICT_ROW detail (StatusDetail),
   * and, as answers come in order, that batch is the first one unanswered.
   */
  private String strictFailure(FlightRuntimeException e) {
    Slice s = inFlight.peekFirst();
    if (!opts.strict || e.status().code() != FlightStatusCode.INVALID_ARGUMENT || s == null) {
      return null;
    }
    Map<String, String> detail = StatusDetail.of(e, StatusDetail.STRICT_ROW);
    if (detail == null) {
      return null;
    }
    try {
      int row = Integer.parseInt(detail.getOrDefault("row", "")); // of the batch sent: the slice from headDone
      return row >= 0 && row < s.rows - headDone ? s.label(headDone + row) : null;
    } catch (NumberFormatException notARow) {
      return null;
    }
  }

  /** The slice the last answer is for. */
  Slice answered() {
    return answered;
  }

  /** A new exchange, to send the unsent slices on, once the socket's listener passed Channels.checkPeer. */
  private void open() throws IOException {
    Channels.checkPeer(endpoint);
    exchange = client.doExchange(descriptor, callOptions);
    VarBinaryVector v = new VarBinaryVector("content", alloc);
    sendRoot = new VectorSchemaRoot(List.of(v));
    exchange.getWriter().start(sendRoot);
    halfClosed = false;
  }

  /**
   * Sends a slice's content from row from (rows answered before a failure
   * are not sent again), sharing its buffers (the slice keeps them for a
   * resend). A new exchange's stream is not ready until the event loop has
   * opened it, and putNext spins until then: this waits parked instead, up
   * to READY_WAIT_NS (a stream that failed never becomes ready; putNext
   * then returns, and the error comes with the answer).
   */
  private void send(Slice s, int from) {
    long deadline = System.nanoTime() + READY_WAIT_NS;
    for (long park = 10_000; !exchange.getWriter().isReady() && System.nanoTime() < deadline;
        park = Math.min(2 * park, 1_000_000)) {
      LockSupport.parkNanos(park);
    }
    VarBinaryVector v = (VarBinaryVector) sendRoot.getVector(0);
    s.content.makeTransferPair(v).splitAndTransfer(from, s.rows - from);
    sendRoot.setRowCount(s.rows - from);
    bytesSent += v.getOffsetBuffer().getInt((long) (s.rows - from) * VarBinaryVector.OFFSET_WIDTH)
        - v.getOffsetBuffer().getInt(0);
    exchange.getWriter().putNext();
    v.clear();
  }

  private void closeExchange() {
    if (exchange != null) {
      try {
        if (more || !inFlight.isEmpty()) { // a task that stops early (a limit, a failure): do not wait for the rest
          exchange.getReader().cancel("the Spark task stopped reading", null);
        }
        exchange.close();
      } catch (Exception ignored) {
        // the error that ended it is the one being retried
      }
      exchange = null;
    }
    while (!inFlight.isEmpty()) { // sent again, first, on the next exchange
      unsent.addFirst(inFlight.removeLast());
    }
    if (sendRoot != null) {
      sendRoot.close();
      sendRoot = null;
    }
  }

  /**
   * A new connection: a gRPC channel that failed waits out its reconnect
   * backoff before it connects again, which could keep a restarted sidecar
   * waiting for seconds (a shared channel is replaced, see Channels).
   */
  private void reconnect() throws IOException {
    closeClient();
    client = connect();
  }

  /** Closes the task's client; a shared channel stays open for the executor's other tasks. */
  private void closeClient() {
    try {
      client.close();
    } catch (Exception ignored) {
      // a channel to a dead sidecar
    }
  }

  /** How long a sidecar unavailable now is retried: see the class comment. */
  private double patience() {
    return cutShort() ? FIRST_CONTACT_SECONDS : retrySeconds;
  }

  /** Whether patience is FIRST_CONTACT_SECONDS rather than retrySeconds. */
  private boolean cutShort() {
    return !everAnswered && !source.contains("executor plugin") && retrySeconds > FIRST_CONTACT_SECONDS;
  }

  private IOException unavailable(FlightRuntimeException e, double waited) {
    String advice = source.contains("executor plugin")
        ? "The executor plugin restarts its sidecar when it exits (at most spark.pixelflight.maxRestarts times): "
            + "the executor's log says why it stopped, and pixelflight-<executor id>.log beside "
            + Sidecar.ENDPOINT_FILE + " holds the sidecar's own log."
        : source.startsWith("the default")
        ? "On Spark, the executor plugin starts one on each executor: set spark.plugins="
            + PixelflightPlugin.class.getName() + " (with the plugin jar in spark.jars). Or start one with "
            + "`pixelflight serve --listen " + endpoint + "` on each machine, or point spark.executorEnv." + ENV
            + " at a running one."
        : "Start one with `pixelflight serve --listen " + endpoint + "`, or point " + ENV
            + " (for executors: spark.executorEnv." + ENV + ") at a running one.";
    String retried = cutShort()
        ? String.format(" It never answered: tried for %.1f s (a sidecar that has answered is waited for %s s, "
            + "from %s).", waited, retrySeconds, retrySource)
        : retrySeconds > 0
        ? String.format(" Retried for %.1f s (%s s from %s).", waited, retrySeconds, retrySource)
        : " Not retried (0 s from " + retrySource + ").";
    return new IOException("pixelflight: no sidecar answers at " + endpoint + " (from " + source + "): "
        + e.getMessage() + rootCause(e) + "." + retried + " " + advice, e);
  }

  /** ": " and the innermost cause's message (gRPC's "io exception" hides a TLS failure), or "". */
  private static String rootCause(Throwable e) {
    Throwable root = e;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    return root == e || root.getMessage() == null ? "" : " (" + root.getMessage() + ")";
  }

  @Override
  public void close() {
    closeExchange();
    closeClient();
    if (answered != null) {
      answered.close();
    }
    for (Deque<Slice> d : List.of(inFlight, unsent)) {
      d.forEach(Slice::close);
      d.clear();
    }
  }
}
