package org.pixelflight.spark;

import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.HashMap;
import java.util.Map;

// Bundled and relocated under org.pixelflight.shaded by the shade plugin.
import io.grpc.ManagedChannel;
import io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.NettyChannelBuilder;
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
 */
final class Channels {
  private static final Map<String, ManagedChannel> OPEN = new HashMap<>();
  private static EventLoopGroup loop;

  private Channels() {}

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

  private static ManagedChannel build(String endpoint) throws IOException {
    URI uri;
    try {
      uri = new URI(endpoint);
    } catch (URISyntaxException e) {
      throw new IOException("the endpoint " + endpoint + " is not a URI: " + e.getMessage(), e);
    }
    if (loop == null) {
      loop = new EpollEventLoopGroup(1, new DefaultThreadFactory("pixelflight-flight", true));
    }
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
    return b.eventLoopGroup(loop).maxInboundMessageSize(Integer.MAX_VALUE).build();
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

  private static String env(String name) {
    String v = System.getenv(name);
    return v == null || v.isEmpty() ? null : v;
  }
}
