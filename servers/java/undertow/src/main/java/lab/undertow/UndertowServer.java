package lab.undertow;

import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.logging.Level;
import java.util.logging.Logger;

import lab.env.LabEnv;

import io.undertow.Undertow;
import io.undertow.server.HttpHandler;
import io.undertow.server.HttpServerExchange;
import io.undertow.util.Headers;

import org.xnio.Options;

/**
 * Undertow core with one root HttpHandler that answers exactly "/api"
 * (PathHandler would also accept "/api/"); every other path gets an empty 404.
 *
 * UNDERTOW_ANSWER_ON chooses the threading model (the undertow.io variant):
 * "worker" (default) dispatches /api from the IO thread to the worker pool,
 * like the thread-pool servers of the lab, and WORKERS = Undertow worker
 * threads (setWorkerThreads); "io" answers on the IO thread that parsed the
 * request, which is Undertow's fast path for non-blocking handlers: the
 * worker pool is still created with WORKERS threads but never used.
 * IO (selector) threads are fixed at Undertow's own default,
 * max(2, available processors), set explicitly.
 *
 * It listens on BIND:PORT (default 127.0.0.1:8080, never every interface
 * unless asked) with an accept backlog of BACKLOG (default 512), XNIO's
 * BACKLOG socket option (Undertow's builder would otherwise give 1000).
 */
public final class UndertowServer {

    private static final ByteBuffer BODY;
    static {
        byte[] bytes = "{\"greeting\":\"Hello World!\"}".getBytes(StandardCharsets.US_ASCII);
        BODY = ByteBuffer.allocateDirect(bytes.length).put(bytes).flip().asReadOnlyBuffer();
    }
    private static final String JSON = "application/json";
    private static final String PATH = "/api";

    private static final class ApiHandler implements HttpHandler {
        private final boolean dispatch;

        ApiHandler(boolean dispatch) {
            this.dispatch = dispatch;
        }

        @Override
        public void handleRequest(HttpServerExchange exchange) {
            if (!PATH.equals(exchange.getRequestPath())) {
                exchange.setStatusCode(404);      // answered on the IO thread
                exchange.endExchange();
                return;
            }
            if (dispatch && exchange.isInIoThread()) {
                exchange.dispatch(this);
                return;
            }
            exchange.getResponseHeaders()
                    .put(Headers.CONTENT_TYPE, JSON)
                    .put(Headers.CONTENT_LENGTH, BODY.remaining());
            exchange.getResponseSender().send(BODY.duplicate());
        }
    }

    public static void main(String[] args) {
        Logger.getLogger("").setLevel(Level.WARNING);   // no INFO chatter (XNIO banner) from JUL
        InetAddress bind = LabEnv.bind();
        int port = LabEnv.port();
        int workers = LabEnv.workers().orElse(0);   // 0: unset, the library's default (as shipped)
        int backlog = LabEnv.backlog();
        boolean dispatch = "worker".equals(LabEnv.choice("UNDERTOW_ANSWER_ON", "worker", "worker", "io"));
        int ioThreads = Math.max(2, Runtime.getRuntime().availableProcessors());
        // Undertow's own default, as its builder computes it: 8 per IO thread
        int ranWorkers = workers > 0 ? workers : ioThreads * 8;

        Undertow server = Undertow.builder()
                .addHttpListener(port, bind.getHostAddress())
                .setSocketOption(Options.BACKLOG, backlog)
                .setIoThreads(ioThreads)
                .setWorkerThreads(ranWorkers)
                .setHandler(new ApiHandler(dispatch))
                .build();
        Runtime.getRuntime().addShutdownHook(new Thread(server::stop));
        server.start();
        System.out.println("undertow listening on " + LabEnv.hostPort(bind, port) + " (backlog " + backlog
                + ") with " + ranWorkers
                + " workers (" + ioThreads + " io threads), answering on "
                + (dispatch ? "the worker pool" : "the io threads"));
        System.out.println("lab-workers: " + ranWorkers + " (XNIO task pool"
                + (workers > 0 ? ", from WORKERS" : ", Undertow's default: 8 per IO thread")
                + "; " + ioThreads + " IO threads)");
        System.out.flush();
    }
}
