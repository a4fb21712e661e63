package lab.grizzly;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.logging.Level;
import java.util.logging.Logger;

import org.glassfish.grizzly.http.server.HttpHandler;
import org.glassfish.grizzly.http.server.HttpServer;
import org.glassfish.grizzly.http.server.NetworkListener;
import org.glassfish.grizzly.http.server.Request;
import org.glassfish.grizzly.http.server.Response;
import org.glassfish.grizzly.http.util.ContentType;
import org.glassfish.grizzly.threadpool.ThreadPoolConfig;

/**
 * Grizzly HTTP server with one plain HttpHandler that answers exactly "/api";
 * every other path gets a 404 (Grizzly's error page).
 *
 * WORKERS = core and max size of the TCPNIOTransport worker thread pool
 * (the default WorkerThreadIOStrategy runs the handler there). The selector
 * (kernel) threads are Grizzly's default: one per available processor.
 *
 * It listens on BIND:PORT (default 127.0.0.1:8080, never every interface
 * unless asked) with an accept backlog of BACKLOG (default 512; Grizzly's
 * own default is 4096), the transport's server connection backlog.
 */
public final class GrizzlyServer {

    private static final byte[] BODY =
            "{\"greeting\":\"Hello World!\"}".getBytes(StandardCharsets.US_ASCII);
    private static final String PATH = "/api";
    private static final ContentType JSON = ContentType.newContentType("application/json").prepare();

    private static final class ApiHandler extends HttpHandler {
        @Override
        public void service(Request request, Response response) throws Exception {
            // Compare the decoded path in place (no String is built).
            if (!request.getRequest().getRequestURIRef().getDecodedRequestURIBC().equals(PATH)) {
                response.sendError(404);
                return;
            }
            response.setContentType(JSON);
            response.setContentLength(BODY.length);
            response.getOutputStream().write(BODY);
        }
    }

    public static void main(String[] args) throws Exception {
        Logger.getLogger("").setLevel(Level.WARNING);   // no INFO chatter from JUL
        InetAddress bind = bindEnv();
        int port = intEnv("PORT", 8080, 65535);
        int workers = intEnv("WORKERS", 0, 10000);   // 0: unset, the library's default (as shipped)
        int backlog = intEnv("BACKLOG", 512, 65535);

        HttpServer server = new HttpServer();
        NetworkListener listener = new NetworkListener("api", bind.getHostAddress(), port);
        listener.getTransport().setServerConnectionBackLog(backlog);
        ThreadPoolConfig pool = listener.getTransport().getWorkerThreadPoolConfig();
        if (workers > 0) {
            pool.setCorePoolSize(workers).setMaxPoolSize(workers);
        }
        listener.getKeepAlive().setMaxRequestsCount(-1);   // unlimited requests per connection
        server.addListener(listener);
        // Registered at the root: Grizzly's mapper gives a lone handler every
        // path, so the handler itself checks for exactly "/api".
        server.getServerConfiguration().addHttpHandler(new ApiHandler());

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            server.shutdownNow();
            stopped.countDown();
        }));
        server.start();
        ThreadPoolConfig ran = listener.getTransport().getWorkerThreadPoolConfig();
        System.out.println("grizzly listening on " + hostPort(bind, port) + " (backlog " + backlog
                + ")");
        // what it runs with, read back from Grizzly (the lab records this line)
        System.out.println("lab-workers: " + ran.getMaxPoolSize() + " (worker pool core "
                + ran.getCorePoolSize() + ", max " + ran.getMaxPoolSize()
                + (workers > 0 ? ", from WORKERS" : ", Grizzly's default") + "; selector threads "
                + listener.getTransport().getSelectorRunnersCount() + ")");
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
