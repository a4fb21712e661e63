package lab.undertow;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.logging.Level;
import java.util.logging.Logger;

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
        InetAddress bind = bindEnv();
        int port = intEnv("PORT", 8080, 65535);
        int workers = intEnv("WORKERS", 0, 10000);   // 0: unset, the library's default (as shipped)
        int backlog = intEnv("BACKLOG", 512, 65535);
        boolean dispatch = "worker".equals(answerOnEnv());
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
        System.out.println("undertow listening on " + hostPort(bind, port) + " (backlog " + backlog
                + ") with " + ranWorkers
                + " workers (" + ioThreads + " io threads), answering on "
                + (dispatch ? "the worker pool" : "the io threads"));
        System.out.println("lab-workers: " + ranWorkers + " (XNIO task pool"
                + (workers > 0 ? ", from WORKERS" : ", Undertow's default: 8 per IO thread")
                + "; " + ioThreads + " IO threads)");
        System.out.flush();
    }

    /** UNDERTOW_ANSWER_ON: "worker" (default) or "io", the thread that answers /api. */
    private static String answerOnEnv() {
        String v = System.getenv("UNDERTOW_ANSWER_ON");
        String on = v == null || v.isBlank() ? "worker" : v.trim();
        if (!on.equals("worker") && !on.equals("io")) {
            throw new IllegalArgumentException("UNDERTOW_ANSWER_ON must be worker or io, got '" + v + "'");
        }
        return on;
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
