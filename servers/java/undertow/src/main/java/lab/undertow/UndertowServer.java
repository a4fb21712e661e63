package lab.undertow;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.undertow.Undertow;
import io.undertow.server.HttpHandler;
import io.undertow.server.HttpServerExchange;
import io.undertow.util.Headers;

/**
 * Undertow core with one root HttpHandler that answers exactly "/api"
 * (PathHandler would also accept "/api/"); every other path gets an empty 404.
 *
 * WORKERS = Undertow worker threads (setWorkerThreads). The /api handler
 * dispatches from the IO thread to the worker pool, like the thread-pool
 * servers of the lab. IO (selector) threads are fixed at Undertow's own
 * default, max(2, available processors), set explicitly.
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
        @Override
        public void handleRequest(HttpServerExchange exchange) {
            if (!PATH.equals(exchange.getRequestPath())) {
                exchange.setStatusCode(404);      // answered on the IO thread
                exchange.endExchange();
                return;
            }
            if (exchange.isInIoThread()) {
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
        int port = intEnv("PORT", 8080);
        int workers = intEnv("WORKERS", 8);
        int ioThreads = Math.max(2, Runtime.getRuntime().availableProcessors());

        Undertow server = Undertow.builder()
                .addHttpListener(port, "0.0.0.0")
                .setIoThreads(ioThreads)
                .setWorkerThreads(workers)
                .setHandler(new ApiHandler())
                .build();
        Runtime.getRuntime().addShutdownHook(new Thread(server::stop));
        server.start();
        System.out.println("undertow listening on " + port + " with " + workers
                + " workers (" + ioThreads + " io threads)");
        System.out.flush();
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
