package lab.tomcat;

import java.io.File;
import java.io.IOException;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.util.logging.Level;
import java.util.logging.Logger;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import org.apache.catalina.Context;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.startup.Tomcat;

/**
 * Embedded Tomcat (NIO connector) with one servlet mapped to exactly "/api";
 * every other path gets Tomcat's 404.
 *
 * WORKERS = the connector's maxThreads (and minSpareThreads), i.e. the size of
 * the request-processing executor. Tomcat's acceptor and poller run on their
 * own threads outside that pool (one each).
 *
 * It listens on BIND:PORT (default 127.0.0.1:8080, never every interface
 * unless asked), the connector's address, with an accept backlog of BACKLOG
 * (default 512), the connector's acceptCount (Tomcat's own default is 100).
 */
public final class TomcatServer {

    private static final byte[] BODY =
            "{\"greeting\":\"Hello World!\"}".getBytes(StandardCharsets.US_ASCII);

    private static final class ApiServlet extends HttpServlet {
        private static final long serialVersionUID = 1L;

        @Override
        protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
            resp.setContentType("application/json");
            resp.setContentLength(BODY.length);
            resp.getOutputStream().write(BODY);
        }
    }

    public static void main(String[] args) throws Exception {
        Logger.getLogger("").setLevel(Level.WARNING);   // no INFO chatter from JULI
        InetAddress bind = bindEnv();
        int port = intEnv("PORT", 8080, 65535);
        int workers = intEnv("WORKERS", 0, 10000);   // 0: unset, the library's default (as shipped)
        int backlog = intEnv("BACKLOG", 512, 65535);

        Tomcat tomcat = new Tomcat();
        // Tomcat wants a base/work directory; keep it out of the source tree.
        // Tomcat needs a work folder: the lab's private one for this start
        // (LAB_SCRATCH, removed at stop), else a per-port one in the temp dir.
        String scratch = System.getenv("LAB_SCRATCH");
        File base = scratch != null && !scratch.isBlank()
                ? new File(scratch, "tomcat")
                : new File(System.getProperty("java.io.tmpdir"), "lab-tomcat-" + port);
        tomcat.setBaseDir(base.getAbsolutePath());
        tomcat.getServer().setPort(-1);                     // no shutdown socket

        Connector connector = tomcat.getConnector();        // HTTP/1.1 NIO
        connector.setPort(port);
        connector.setThrowOnFailure(true);                  // a failed bind must fail start()
        connector.setProperty("address", bind.getHostAddress());
        connector.setProperty("acceptCount", Integer.toString(backlog));
        if (workers > 0) {                                  // unset: Tomcat's own (as shipped)
            connector.setProperty("maxThreads", Integer.toString(workers));
            connector.setProperty("minSpareThreads", Integer.toString(workers));
        }
        connector.setProperty("maxKeepAliveRequests", "-1");  // unlimited requests per connection

        Context ctx = tomcat.addContext("", null);
        Tomcat.addServlet(ctx, "api", new ApiServlet());
        ctx.addServletMappingDecoded("/api", "api");

        tomcat.start();
        System.out.println("tomcat listening on " + hostPort(bind, port) + " (backlog " + backlog
                + ")");
        // what it runs with, read back from the connector (the lab records this line)
        System.out.println("lab-workers: " + connector.getProperty("maxThreads")
                + " (connector maxThreads " + connector.getProperty("maxThreads")
                + ", minSpareThreads " + connector.getProperty("minSpareThreads")
                + (workers > 0 ? ", from WORKERS" : ", Tomcat's default") + ")");
        System.out.flush();
        tomcat.getServer().await();
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
