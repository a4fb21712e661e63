package lab.jersey;

import java.io.File;
import java.net.InetAddress;
import java.net.URI;
import java.util.concurrent.CountDownLatch;
import java.util.logging.Level;
import java.util.logging.Logger;

import lab.env.LabEnv;

import io.undertow.Undertow;
import io.undertow.servlet.Servlets;
import io.undertow.servlet.api.DeploymentManager;
import io.undertow.servlet.util.ImmediateInstanceFactory;

import org.apache.catalina.Context;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.startup.Tomcat;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.glassfish.grizzly.http.server.HttpServer;
import org.glassfish.grizzly.http.server.NetworkListener;
import org.glassfish.jersey.grizzly2.httpserver.GrizzlyHttpServerFactory;
import org.glassfish.jersey.jetty.JettyHttpContainer;
import org.glassfish.jersey.server.ContainerFactory;
import org.glassfish.jersey.server.ResourceConfig;
import org.glassfish.jersey.server.ServerProperties;
import org.glassfish.jersey.servlet.ServletContainer;
import org.xnio.Options;

/**
 * One JAX-RS application (ApiResource) on the container JAXRS_CONTAINER
 * names, so that the containers are compared under the same Jersey code:
 *
 * <ul>
 * <li>grizzly (default): GrizzlyHttpServerFactory. WORKERS = core and max
 *     size of the TCPNIOTransport worker pool; selector threads are
 *     Grizzly's default, one per available processor.</li>
 * <li>jetty: Jersey's JettyHttpContainer, a core Jetty Handler. WORKERS =
 *     request threads: the QueuedThreadPool holds WORKERS + 1 acceptor +
 *     selectors, because Jetty draws those from the same pool (as the lab's
 *     jetty server does).</li>
 * <li>tomcat: Jersey's ServletContainer on embedded Tomcat (NIO connector).
 *     WORKERS = maxThreads = minSpareThreads.</li>
 * <li>undertow: Jersey's ServletContainer in an Undertow servlet deployment;
 *     servlet requests run on the worker pool. WORKERS = setWorkerThreads;
 *     IO threads max(2, available processors), Undertow's own default.</li>
 * </ul>
 *
 * Paths other than /api get Jersey's 404 (each container maps everything to
 * Jersey). Jersey buffers the small entity and sets Content-Length itself on
 * Grizzly and the servlet containers; on Jetty see jetty().
 *
 * It listens on BIND:PORT (default 127.0.0.1:8080, never every interface
 * unless asked) with the accept backlog BACKLOG (default 512), set through
 * each container's own listener option.
 */
public final class JerseyServer {

    /** Stops a started container (run by the shutdown hook). */
    private interface Running {
        void stop() throws Exception;
    }

    public static void main(String[] args) throws Exception {
        Logger.getLogger("").setLevel(Level.WARNING);   // no INFO chatter from JUL
        InetAddress bind = LabEnv.bind();
        int port = LabEnv.port();
        int workers = LabEnv.workers().orElse(8);
        int backlog = LabEnv.backlog();
        String container = LabEnv.choice("JAXRS_CONTAINER", "grizzly", "grizzly", "jetty", "tomcat", "undertow");

        ResourceConfig config = new ResourceConfig(ApiResource.class)
                .property(ServerProperties.WADL_FEATURE_DISABLE, true);
        Running running = switch (container) {
            case "jetty" -> jetty(config, bind, port, workers, backlog);
            case "tomcat" -> tomcat(config, bind, port, workers, backlog);
            case "undertow" -> undertow(config, bind, port, workers, backlog);
            default -> grizzly(config, bind, port, workers, backlog);
        };

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                running.stop();
            } catch (Exception e) {
                e.printStackTrace();
            }
            stopped.countDown();
        }));
        System.out.println("jersey on " + container + " listening on " + LabEnv.hostPort(bind, port)
                + " (backlog " + backlog + ") with " + workers + " workers");
        System.out.flush();
        stopped.await();
    }

    private static Running grizzly(ResourceConfig config, InetAddress bind, int port,
                                   int workers, int backlog) throws Exception {
        HttpServer server = GrizzlyHttpServerFactory.createHttpServer(
                URI.create("http://" + LabEnv.hostPort(bind, port) + "/"), config, false);
        for (NetworkListener listener : server.getListeners()) {
            listener.getTransport().setServerConnectionBackLog(backlog);
            listener.getTransport().getWorkerThreadPoolConfig()
                    .setCorePoolSize(workers).setMaxPoolSize(workers);
            listener.getKeepAlive().setMaxRequestsCount(-1);   // unlimited requests per connection
        }
        server.start();
        return server::shutdownNow;
    }

    private static Running jetty(ResourceConfig config, InetAddress bind, int port,
                                 int workers, int backlog) throws Exception {
        int acceptors = 1;
        int selectors = Math.max(1, Runtime.getRuntime().availableProcessors() / 2);
        int poolSize = workers + acceptors + selectors;
        QueuedThreadPool pool = new QueuedThreadPool(poolSize, poolSize);
        pool.setName("jetty");
        Server server = new Server(pool);
        ServerConnector connector = new ServerConnector(server, acceptors, selectors,
                new HttpConnectionFactory());
        connector.setHost(bind.getHostAddress());
        connector.setPort(port);
        connector.setAcceptQueueSize(backlog);
        server.addConnector(connector);
        // Jersey's Jetty 12 container turns Jersey's response buffering off
        // (enableResponseBuffering() is false), so the entity would go out
        // chunked; the interceptor restores the length (see its comment).
        config.register(ContentLengthInterceptor.class);
        server.setHandler(ContainerFactory.createContainer(JettyHttpContainer.class, config));
        server.start();
        return server::stop;
    }

    private static Running tomcat(ResourceConfig config, InetAddress bind, int port,
                                  int workers, int backlog) throws Exception {
        Tomcat tomcat = new Tomcat();
        // Tomcat wants a base/work directory; keep it out of the source tree.
        File base = new File(System.getProperty("java.io.tmpdir"), "lab-jersey-tomcat-" + port);
        tomcat.setBaseDir(base.getAbsolutePath());
        tomcat.getServer().setPort(-1);                     // no shutdown socket

        Connector connector = tomcat.getConnector();        // HTTP/1.1 NIO
        connector.setPort(port);
        connector.setThrowOnFailure(true);                  // a failed bind must fail start()
        connector.setProperty("address", bind.getHostAddress());
        connector.setProperty("acceptCount", Integer.toString(backlog));
        connector.setProperty("maxThreads", Integer.toString(workers));
        connector.setProperty("minSpareThreads", Integer.toString(workers));
        connector.setProperty("maxKeepAliveRequests", "-1");  // unlimited requests per connection

        Context ctx = tomcat.addContext("", null);
        Tomcat.addServlet(ctx, "jersey", new ServletContainer(config));
        ctx.addServletMappingDecoded("/*", "jersey");
        tomcat.start();
        return tomcat::stop;
    }

    private static Running undertow(ResourceConfig config, InetAddress bind, int port,
                                    int workers, int backlog) throws Exception {
        DeploymentManager deployment = Servlets.defaultContainer().addDeployment(
                Servlets.deployment()
                        .setClassLoader(JerseyServer.class.getClassLoader())
                        .setContextPath("/")
                        .setDeploymentName("jersey")
                        .addServlet(Servlets.servlet("jersey", ServletContainer.class,
                                        new ImmediateInstanceFactory<>(new ServletContainer(config)))
                                .addMapping("/*")
                                .setLoadOnStartup(1)));
        deployment.deploy();
        Undertow server = Undertow.builder()
                .addHttpListener(port, bind.getHostAddress())
                .setSocketOption(Options.BACKLOG, backlog)
                .setIoThreads(Math.max(2, Runtime.getRuntime().availableProcessors()))
                .setWorkerThreads(workers)
                .setHandler(deployment.start())
                .build();
        server.start();
        return () -> {
            server.stop();
            deployment.stop();
        };
    }
}
