package lab.grizzly;

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
        int port = intEnv("PORT", 8080);
        int workers = intEnv("WORKERS", 8);

        HttpServer server = new HttpServer();
        NetworkListener listener = new NetworkListener("api", "0.0.0.0", port);
        ThreadPoolConfig pool = listener.getTransport().getWorkerThreadPoolConfig();
        pool.setCorePoolSize(workers).setMaxPoolSize(workers);
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
        System.out.println("grizzly listening on " + port + " with " + workers + " workers");
        System.out.flush();
        stopped.await();
    }

    private static int intEnv(String name, int fallback) {
        String v = System.getenv(name);
        if (v == null || v.isBlank()) {
            return fallback;
        }
        int n = Integer.parseInt(v.trim());
        if (n < 1) {
            throw new IllegalArgumentException(name + " must be >= 1, got " + v);
        }
        return n;
    }
}
