package lab.jetty;

import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

import lab.env.LabEnv;

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
        InetAddress bind = LabEnv.bind();
        int port = LabEnv.port();
        int workers = LabEnv.workers().orElse(0);   // 0: unset, the library's default (as shipped)
        int backlog = LabEnv.backlog();
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
        System.out.println("jetty listening on " + LabEnv.hostPort(bind, port) + " (backlog " + backlog
                + ")");
        // what it runs with, read back from Jetty (the lab records this line)
        System.out.println("lab-workers: " + (pool.getMaxThreads() - ranAcceptors - ranSelectors)
                + " (request threads; QueuedThreadPool min " + pool.getMinThreads() + ", max "
                + pool.getMaxThreads() + (workers > 0 ? ", from WORKERS" : ", Jetty's default")
                + "; " + ranAcceptors + " acceptor, " + ranSelectors + " selectors)");
        System.out.flush();
        server.join();
    }
}
