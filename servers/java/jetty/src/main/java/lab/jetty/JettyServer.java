package lab.jetty;

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
        int port = intEnv("PORT", 8080);
        int workers = intEnv("WORKERS", 8);
        int acceptors = 1;
        int selectors = Math.max(1, Runtime.getRuntime().availableProcessors() / 2);
        int poolSize = workers + acceptors + selectors;

        QueuedThreadPool pool = new QueuedThreadPool(poolSize, poolSize);
        pool.setName("jetty");
        Server server = new Server(pool);
        ServerConnector connector = new ServerConnector(server, acceptors, selectors,
                new HttpConnectionFactory());
        connector.setHost("0.0.0.0");
        connector.setPort(port);
        server.addConnector(connector);
        server.setHandler(new ApiHandler());
        server.setStopAtShutdown(true);
        server.start();
        System.out.println("jetty listening on " + port + " with " + workers + " workers ("
                + acceptors + " acceptor, " + selectors + " selectors, pool " + poolSize + ")");
        System.out.flush();
        server.join();
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
