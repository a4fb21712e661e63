package lab.jetty;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

import org.eclipse.jetty.http.HttpField;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.PreEncodedHttpField;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.thread.QueuedThreadPool;

/**
 * Embedded Jetty 12 with a core (non-servlet) Handler. Only "/api" is
 * handled; for every other path the handler declines and Jetty answers 404.
 *
 * WORKERS = threads left for request handling: the QueuedThreadPool is sized
 * min = max = WORKERS + acceptors + selectors, because Jetty takes the
 * acceptor and selector threads out of the same pool (1 acceptor, and
 * max(1, available processors / 2) selectors, Jetty's own default ratio).
 *
 * It listens on BIND:PORT (default 127.0.0.1:8080, never every interface
 * unless asked) with an accept queue of BACKLOG (default 512). Jetty's own
 * default (0) leaves it to the JDK, which gives 50: a burst of connections
 * to a cold server then overflows the queue and waits for SYN retransmits.
 */
public final class JettyServer {

    private static final ByteBuffer BODY;
    static {
        byte[] bytes = "{\"greeting\":\"Hello World!\"}".getBytes(StandardCharsets.US_ASCII);
        BODY = ByteBuffer.allocateDirect(bytes.length).put(bytes).flip().asReadOnlyBuffer();
    }
    private static final HttpField CONTENT_TYPE =
            new PreEncodedHttpField(HttpHeader.CONTENT_TYPE, "application/json");
    private static final HttpField CONTENT_LENGTH =
            new PreEncodedHttpField(HttpHeader.CONTENT_LENGTH, BODY.remaining());

    private static final class ApiHandler extends Handler.Abstract.NonBlocking {
        @Override
        public boolean handle(Request request, Response response, Callback callback) {
            if (!"/api".equals(Request.getPathInContext(request))) {
                return false;                      // Server answers 404
            }
            response.setStatus(200);
            response.getHeaders().put(CONTENT_TYPE).put(CONTENT_LENGTH);
            response.write(true, BODY.slice(), callback);
            return true;
        }
    }

    public static void main(String[] args) throws Exception {
        InetAddress bind = bindEnv();
        int port = intEnv("PORT", 8080, 65535);
        int workers = intEnv("WORKERS", 0, 10000);   // 0: unset, the library's default (as shipped)
        int backlog = intEnv("BACKLOG", 512, 65535);
        // WORKERS given: a pool of exactly WORKERS request threads plus 1 acceptor
        // and the selectors; unset: Jetty's own defaults (as shipped)
        int acceptors = workers > 0 ? 1 : -1;
        int selectors = workers > 0 ? Math.max(1, Runtime.getRuntime().availableProcessors() / 2)
                : -1;
        int poolSize = workers + acceptors + selectors;

        QueuedThreadPool pool = workers > 0 ? new QueuedThreadPool(poolSize, poolSize)
                : new QueuedThreadPool();
        pool.setName("jetty");
        Server server = new Server(pool);
        ServerConnector connector = new ServerConnector(server, acceptors, selectors,
                new HttpConnectionFactory());
        connector.setHost(bind.getHostAddress());
        connector.setPort(port);
        connector.setAcceptQueueSize(backlog);
        server.addConnector(connector);
        server.setHandler(new ApiHandler());
        server.setStopAtShutdown(true);
        server.start();
        int ranAcceptors = connector.getAcceptors();
        int ranSelectors = connector.getSelectorManager().getSelectorCount();
        System.out.println("jetty listening on " + hostPort(bind, port) + " (backlog " + backlog
                + ")");
        // what it runs with, read back from Jetty (the lab records this line)
        System.out.println("lab-workers: " + (pool.getMaxThreads() - ranAcceptors - ranSelectors)
                + " (request threads; QueuedThreadPool min " + pool.getMinThreads() + ", max "
                + pool.getMaxThreads() + (workers > 0 ? ", from WORKERS" : ", Jetty's default")
                + "; " + ranAcceptors + " acceptor, " + ranSelectors + " selectors)");
        System.out.flush();
        server.join();
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
