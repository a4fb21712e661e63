package lab.tomcat;

import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.util.logging.Level;
import java.util.logging.Logger;

import lab.env.LabEnv;

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
        InetAddress bind = LabEnv.bind();
        int port = LabEnv.port();
        int workers = LabEnv.workers().orElse(0);   // 0: unset, the library's default (as shipped)
        int backlog = LabEnv.backlog();

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
        System.out.println("tomcat listening on " + LabEnv.hostPort(bind, port) + " (backlog " + backlog
                + ")");
        // what it runs with, read back from the connector (the lab records this line)
        System.out.println("lab-workers: " + connector.getProperty("maxThreads")
                + " (connector maxThreads " + connector.getProperty("maxThreads")
                + ", minSpareThreads " + connector.getProperty("minSpareThreads")
                + (workers > 0 ? ", from WORKERS" : ", Tomcat's default") + ")");
        System.out.flush();
        tomcat.getServer().await();
    }
}
