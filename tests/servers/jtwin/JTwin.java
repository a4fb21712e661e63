import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import lab.env.LabEnv;

/**
 * The JVM twin of tests/servers/twin: a correct server whose cost per request
 * is set, JTWIN_CPU_US microseconds of the handling thread's own CPU time (a
 * busy loop on ThreadMXBean.getCurrentThreadCpuTime, so the cost is the same
 * whatever else runs), on the JDK's own com.sun.net.httpserver.HttpServer (no
 * third-party code). Two builds that differ by a known amount, for paired
 * runs (PAIRED=duet): the variants of server.toml.
 *
 * <p>GET /api: 200, application/json, Content-Length 27; another path: 404;
 * another method on /api: 405. HTTP/1.1 connections are kept alive, and a
 * request that says Connection: close is answered with it, then closed.
 * BIND, PORT, BACKLOG and WORKERS (the fixed pool that runs the handler) are
 * read by the lab's own lab.env.LabEnv (servers/java/labenv), compiled with
 * this file; a bad value stops the start with a message naming the variable.
 */
public final class JTwin {

    private static final byte[] BODY = "{\"greeting\":\"Hello World!\"}"
            .getBytes(StandardCharsets.US_ASCII);
    private static final int DEFAULT_WORKERS = 4;      // server.toml's [workers] default
    private static final double MAX_CPU_US = 1_000_000;

    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private JTwin() {
    }

    /** JTWIN_CPU_US as nanoseconds: a number from 0 to MAX_CPU_US; 0 when unset. */
    static long cpuNanos() {
        String v = System.getenv("JTWIN_CPU_US");
        if (v == null || v.isBlank()) {
            return 0;
        }
        try {
            double us = Double.parseDouble(v.trim());
            if (us >= 0 && us <= MAX_CPU_US) {
                return Math.round(us * 1000);
            }
        } catch (NumberFormatException e) {
            // reported below, like a value out of range
        }
        throw new IllegalArgumentException("JTWIN_CPU_US must be a number of microseconds from 0 to "
                + (long) MAX_CPU_US + ", got '" + v + "'");
    }

    /** nanos of this thread's own CPU time, spent in a busy loop. */
    static void burn(long nanos) {
        long end = THREADS.getCurrentThreadCpuTime() + nanos;
        while (THREADS.getCurrentThreadCpuTime() < end) {
            // busy: each turn reads the clock (clock_gettime of the thread's CPU clock)
        }
    }

    /** A Connection header of the request lists `close` (comma-separated, any case). */
    static boolean asksClose(Headers request) {
        List<String> values = request.get("Connection");
        if (values == null) {
            return false;
        }
        for (String value : values) {
            for (String token : value.split(",")) {
                if (token.trim().toLowerCase(Locale.ROOT).equals("close")) {
                    return true;
                }
            }
        }
        return false;
    }

    static void handle(HttpExchange ex, long cpuNanos) throws IOException {
        try {
            Headers out = ex.getResponseHeaders();
            if (asksClose(ex.getRequestHeaders())) {
                out.set("Connection", "close");      // the JDK closes after it; it does not say so
            }
            if (!"/api".equals(ex.getRequestURI().toString())) {
                ex.sendResponseHeaders(404, -1);      // -1: no body, Content-length: 0
                return;
            }
            if (!"GET".equals(ex.getRequestMethod())) {
                out.set("Allow", "GET");
                ex.sendResponseHeaders(405, -1);
                return;
            }
            if (cpuNanos > 0) {
                burn(cpuNanos);
            }
            out.set("Content-Type", "application/json");
            ex.sendResponseHeaders(200, BODY.length);
            try (OutputStream body = ex.getResponseBody()) {
                body.write(BODY);
            }
        } finally {
            ex.close();
        }
    }

    public static void main(String[] args) throws IOException {
        // The JDK writes the head and the body with two writes: without
        // TCP_NODELAY the body waits for the client's delayed ACK of the head
        // (40 ms a keep-alive request). Read once, when the server is made.
        System.setProperty("sun.net.httpserver.nodelay", "true");
        InetAddress bind;
        int port;
        int backlog;
        int workers;
        long cpu;
        try {
            bind = LabEnv.bind();
            port = LabEnv.port();
            backlog = LabEnv.backlog();
            workers = LabEnv.workers().orElse(DEFAULT_WORKERS);
            cpu = cpuNanos();
        } catch (IllegalArgumentException e) {
            System.err.println("jtwin: " + e.getMessage());
            System.exit(1);
            return;
        }
        if (cpu > 0 && !(THREADS.isCurrentThreadCpuTimeSupported() && THREADS.isThreadCpuTimeEnabled())) {
            System.err.println("jtwin: this JVM cannot read a thread's CPU time "
                    + "(ThreadMXBean.isCurrentThreadCpuTimeSupported), so JTWIN_CPU_US cannot be burnt");
            System.exit(1);
            return;
        }
        AtomicInteger made = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(workers, task -> {
            Thread t = new Thread(task, "jtwin-worker-" + made.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        // said before the socket is bound: the lab reads it once the port accepts
        System.out.println("lab-workers: " + workers + " (fixed thread pool running the handler; "
                + "one HttpServer dispatcher thread besides)");
        System.out.flush();
        HttpServer server = HttpServer.create(new InetSocketAddress(bind, port), backlog);
        long nanos = cpu;
        server.createContext("/", ex -> handle(ex, nanos));
        server.setExecutor(pool);
        server.start();
        System.out.printf(Locale.ROOT, "jtwin listening on %s backlog %d: %s us CPU a request (Java %s)%n",
                LabEnv.hostPort(bind, port), backlog, nanos % 1000 == 0 ? Long.toString(nanos / 1000)
                        : Double.toString(nanos / 1000.0), System.getProperty("java.version"));
        System.out.flush();
    }
}
