package org.pixelflight.spark;

import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

import org.apache.arrow.flight.CallStatus;

// Bundled and relocated under org.pixelflight.shaded by the shade plugin.
import io.grpc.ManagedChannel;
import io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.NettyChannelBuilder;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.epoll.EpollEventLoopGroup;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.unix.DomainSocketAddress;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.util.concurrent.DefaultThreadFactory;

/**
 * The gRPC channels to sidecars, one per endpoint, shared by every task of
 * the executor's JVM, on one event loop thread (a daemon): a channel and
 * event loop set up per task cost more JVM CPU than the task's files.
 * Endpoints are grpc+unix://PATH (or unix://PATH, as serve takes it),
 * grpc://HOST:PORT (or grpc+tcp://) and grpc+tls://HOST:PORT; for TLS, PIXELFLIGHT_TLS_CA, PIXELFLIGHT_CLIENT_CERT,
 * PIXELFLIGHT_CLIENT_KEY and PIXELFLIGHT_TLS_OVERRIDE_HOSTNAME are read as
 * the Python client reads them. A task whose sidecar became unavailable
 * replaces the channel it used (a failed channel waits out its reconnect
 * backoff, which could keep a restarted sidecar waiting for seconds); tasks
 * that used the same one then get the new one.
 *
 * <p>FlightClient.Builder casts the epoll channel to a server channel
 * (apache/arrow-java#1039, fixed after Arrow 18.3), so the channels are
 * built here.
 *
 * <p>Unix sockets: before each exchange, {@link #checkPeer} applies
 * SECURITY.md's rule, as the Python client does with the same words: it
 * connects to the socket, reads the uid of the process listening there
 * (SO_PEERCRED, Netty epoll's peerCredentials: a number, where the JDK's
 * SO_PEERCRED gives a user name) and closes the connection without
 * sending a byte; a uid other than this JVM's effective uid is refused
 * before the token or a file is sent. The check is a connection of its
 * own because gRPC opens its connections inside the shared channel, with
 * no hook before its first bytes.
 */
final class Channels {
  /** The refusal of another user's socket: path, its listener's uid, ours. The Python client's PEER_MESSAGE. */
  static final String PEER_MESSAGE = "refusing the Unix socket %s: the process listening there runs as uid %d, "
      + "not as uid %d like this client; nothing was sent to it (another user's socket could capture the token "
      + "and the images: see SECURITY.md)";
  private static final int PROBE_TIMEOUT_MS = 5000;
  private static final Map<String, ManagedChannel> OPEN = new HashMap<>();
  private static EventLoopGroup loop;

  private Channels() {}

  /**
   * The sidecar's default location, as serve's default --listen and the
   * Python client's default_endpoint: grpc+unix:// and
   * $XDG_RUNTIME_DIR/pixelflight/pixelflight.sock when XDG_RUNTIME_DIR is
   * an absolute path, else $TMPDIR/pixelflight-&lt;uid&gt;/pixelflight.sock
   * ($TMPDIR: /tmp when unset or empty; the effective uid).
   */
  static String defaultEndpoint() throws IOException {
    String run = System.getenv("XDG_RUNTIME_DIR");
    Path sock;
    if (run != null && !run.isEmpty() && Path.of(run).isAbsolute()) {
      sock = Path.of(run, "pixelflight", "pixelflight.sock");
    } else {
      String tmp = System.getenv("TMPDIR");
      sock = Path.of(tmp == null || tmp.isEmpty() ? "/tmp" : tmp, "pixelflight-" + euid(), "pixelflight.sock");
    }
    return "grpc+unix://" + sock.normalize();
  }

  /** This JVM's effective uid, from /proc/self/status. */
  static long euid() throws IOException {
    for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
      if (line.startsWith("Uid:")) {
        return Long.parseLong(line.substring(4).trim().split("\\s+")[1]); // real, effective, saved, file system
      }
    }
    throw new IOException("no Uid line in /proc/self/status");
  }

  /**
   * For a grpc+unix (or unix) endpoint: an IOException in PEER_MESSAGE's
   * words when the process listening at its socket runs as another uid
   * than this JVM, and an UNAVAILABLE FlightRuntimeException (retried as
   * gRPC's own) when none listens there. Other endpoints pass.
   */
  static void checkPeer(String endpoint) throws IOException {
    String path = unixPath(endpoint);
    if (path == null) {
      return;
    }
    Bootstrap b = new Bootstrap().group(loop()).channel(EpollDomainSocketChannel.class)
        .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, PROBE_TIMEOUT_MS).handler(new ChannelInboundHandlerAdapter());
    ChannelFuture f = b.connect(new DomainSocketAddress(path));
    if (!f.awaitUninterruptibly(PROBE_TIMEOUT_MS + 1000L) || !f.isSuccess()) {
      f.channel().close();
      Throwable why = f.cause();
      throw CallStatus.UNAVAILABLE.withDescription("connecting to " + path + ": "
          + (why == null ? "timed out" : why.getMessage())).toRuntimeException();
    }
    long uid;
    try {
      uid = Integer.toUnsignedLong(((EpollDomainSocketChannel) f.channel()).peerCredentials().uid());
    } finally {
      f.channel().close();
    }
    long ours = euid();
    if (uid != ours) {
      throw new IOException(String.format(PEER_MESSAGE, path, uid, ours));
    }
  }

  /** The socket path of a grpc+unix:// or unix:// endpoint, else null. */
  private static String unixPath(String endpoint) throws IOException {
    URI uri = uri(endpoint);
    String scheme = String.valueOf(uri.getScheme());
    return scheme.equals("grpc+unix") || scheme.equals("unix") ? uri.getPath() : null;
  }

  private static synchronized EventLoopGroup loop() {
    if (loop == null) {
      loop = new EpollEventLoopGroup(1, new DefaultThreadFactory("pixelflight-flight", true));
    }
    return loop;
  }

  /** The shared channel to endpoint. */
  static synchronized ManagedChannel get(String endpoint) throws IOException {
    ManagedChannel c = OPEN.get(endpoint);
    if (c == null) {
      c = build(endpoint);
      OPEN.put(endpoint, c);
    }
    return c;
  }

  /** A new channel to endpoint in place of failed, unless another task replaced it already. */
  static synchronized ManagedChannel replace(String endpoint, ManagedChannel failed) throws IOException {
    if (OPEN.get(endpoint) == failed) {
      OPEN.remove(endpoint);
      failed.shutdownNow();
    }
    return get(endpoint);
  }

  private static URI uri(String endpoint) throws IOException {
    try {
      return new URI(endpoint);
    } catch (URISyntaxException e) {
      throw new IOException("the endpoint " + endpoint + " is not a URI: " + e.getMessage(), e);
    }
  }

  private static ManagedChannel build(String endpoint) throws IOException {
    URI uri = uri(endpoint);
    String scheme = String.valueOf(uri.getScheme());
    NettyChannelBuilder b;
    if (scheme.equals("grpc+unix") || scheme.equals("unix")) { // unix://: as serve and the Python client take it
      if (uri.getRawAuthority() != null) { // grpc+unix://tmp/x.sock: the path would be /x.sock
        throw new IOException("the endpoint " + endpoint + ": want " + scheme + ":///absolute/path.sock (three slashes): \""
            + uri.getRawAuthority() + "\" would be read as a host");
      }
      if (uri.getPath() == null || !uri.getPath().startsWith("/")) {
        throw new IOException("the endpoint " + endpoint + ": want an absolute socket path, as in grpc+unix:///tmp/pixelflight.sock");
      }
      b = NettyChannelBuilder.forAddress(new DomainSocketAddress(uri.getPath()))
          .channelType(EpollDomainSocketChannel.class).usePlaintext().overrideAuthority("localhost");
    } else if (scheme.equals("grpc") || scheme.equals("grpc+tcp") || scheme.equals("grpc+tls")) {
      if (uri.getHost() == null || uri.getPort() < 0) {
        throw new IOException("the endpoint " + endpoint + " has no host:port");
      }
      b = NettyChannelBuilder.forAddress(uri.getHost(), uri.getPort()).channelType(EpollSocketChannel.class);
      if (scheme.equals("grpc+tls")) {
        tls(b);
      } else {
        b.usePlaintext();
      }
    } else {
      throw new IOException("the endpoint " + endpoint
          + " is not grpc+unix://PATH (or unix://PATH), grpc://HOST:PORT, grpc+tcp://HOST:PORT or grpc+tls://HOST:PORT");
    }
    return b.eventLoopGroup(loop()).maxInboundMessageSize(Integer.MAX_VALUE).build();
  }

  private static void tls(NettyChannelBuilder b) throws IOException {
    SslContextBuilder ssl = GrpcSslContexts.forClient();
    String ca = env("PIXELFLIGHT_TLS_CA");
    String cert = env("PIXELFLIGHT_CLIENT_CERT");
    String key = env("PIXELFLIGHT_CLIENT_KEY");
    String host = env("PIXELFLIGHT_TLS_OVERRIDE_HOSTNAME");
    try {
      if (ca != null) {
        ssl.trustManager(new File(ca));
      }
      if (cert != null && key != null) {
        ssl.keyManager(new File(cert), new File(key));
      }
      b.sslContext(ssl.build());
    } catch (IllegalArgumentException | javax.net.ssl.SSLException e) {
      throw new IOException("cannot use the TLS files (PIXELFLIGHT_TLS_CA=" + ca + ", PIXELFLIGHT_CLIENT_CERT="
          + cert + ", PIXELFLIGHT_CLIENT_KEY=" + key + "): " + e.getMessage(), e);
    }
    if (host != null) {
      b.overrideAuthority(host);
    }
  }

  /**
   * An executor's client variable (PIXELFLIGHT_TOKEN, _TLS_CA, ...): its
   * environment's, else spark.executorEnv.NAME, which local mode gives
   * its Python workers but not its JVM's environment; null when unset or
   * empty. So the JVM's tasks read what the Python workers read.
   */
  static String env(String name) {
    String v = System.getenv(name);
    if (v == null || v.isEmpty()) {
      org.apache.spark.SparkEnv spark = org.apache.spark.SparkEnv.get();
      v = spark == null ? null : spark.conf().get("spark.executorEnv." + name, null);
    }
    return v == null || v.isEmpty() ? null : v;
  }
}
