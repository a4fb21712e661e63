package lab.jersey;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.net.URI;
import java.util.concurrent.CountDownLatch;
import java.util.logging.Level;
import java.util.logging.Logger;

import org.glassfish.grizzly.http.server.HttpServer;
import org.glassfish.grizzly.http.server.NetworkListener;
import org.glassfish.jersey.grizzly2.httpserver.GrizzlyHttpServerFactory;
import org.glassfish.jersey.server.ResourceConfig;
import org.glassfish.jersey.server.ServerProperties;

/**
 * Jersey (JAX-RS) on the Grizzly HTTP container, as made by
 * GrizzlyHttpServerFactory. Paths other than /api get Jersey's 404.
 *
 * WORKERS = core and max size of the Grizzly TCPNIOTransport worker thread
 * pool under Jersey (resource methods run there). Selector threads are
 * Grizzly's default: one per available processor.
 *
 * It listens on BIND:PORT (default 127.0.0.1:8080, never every interface
 * unless asked): the host of the base URI becomes the Grizzly listener's
 * host. The accept backlog is BACKLOG (default 512; Grizzly's own default
 * is 4096), set on the listener's transport before the server starts.
 */
public final class JerseyServer {

    public static void main(String[] args) throws Exception {
        Logger.getLogger("").setLevel(Level.WARNING);   // no INFO chatter from JUL
        InetAddress bind = bindEnv();
        int port = intEnv("PORT", 8080, 65535);
        int workers = intEnv("WORKERS", 8, 10000);
        int backlog = intEnv("BACKLOG", 512, 65535);

        ResourceConfig config = new ResourceConfig(ApiResource.class)
                .property(ServerProperties.WADL_FEATURE_DISABLE, true);
        HttpServer server = GrizzlyHttpServerFactory.createHttpServer(
                URI.create("http://" + hostPort(bind, port) + "/"), config, false);
        for (NetworkListener listener : server.getListeners()) {
            listener.getTransport().setServerConnectionBackLog(backlog);
            listener.getTransport().getWorkerThreadPoolConfig()
                    .setCorePoolSize(workers).setMaxPoolSize(workers);
            listener.getKeepAlive().setMaxRequestsCount(-1);   // unlimited requests per connection
        }

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            server.shutdownNow();
            stopped.countDown();
        }));
        server.start();
        System.out.println("jersey listening on " + hostPort(bind, port) + " (backlog " + backlog
                + ") with " + workers + " workers");
        System.out.flush();
        stopped.await();
    }

    /** A whole number from 1 to max in the environment variable name; fallback when unset. */
    private static int intEnv(String name, int fallback, int max) {
        String v = System.getenv(name);
        if (v == null || v.isBlank()) {
            return fallback;
        }
        try {
            int n = Integer.parseInt(v.trim());
            if (n >= 1 && n <= max) {
                return n;
            }
        } catch (NumberFormatException e) {
            // reported below, like a value out of range
        }
        throw new IllegalArgumentException(name + " must be a whole number from 1 to " + max
                + ", got '" + v + "'");
    }

    /**
     * BIND, the address to listen on: 127.0.0.1 when unset. Only an IP literal
     * is taken, a dotted quad or (with a colon) IPv6, which getByName parses
     * without a lookup: a host name could resolve to addresses the lab does
     * not expect.
     */
    private static InetAddress bindEnv() {
        String v = System.getenv("BIND");
        String ip = v == null || v.isBlank() ? "127.0.0.1" : v.trim();
        String octet = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
        if (ip.contains(":") || ip.matches(octet + "(\\." + octet + "){3}")) {
            try {
                return InetAddress.getByName(ip);
            } catch (UnknownHostException e) {
                // reported below
            }
        }
        throw new IllegalArgumentException("BIND must be an IP address such as 127.0.0.1 or ::1, got '"
                + v + "'");
    }

    private static String hostPort(InetAddress address, int port) {
        String host = address.getHostAddress();
        return (address instanceof Inet6Address ? "[" + host + "]" : host) + ":" + port;
    }
}
