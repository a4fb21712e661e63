package lab.jersey;

import jakarta.inject.Singleton;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;

/** The JAX-RS resource of the Ada-vs-Java study: a constant JSON string. */
@Path("/api")
@Singleton
public class ApiResource {

    private static final String GREETING = "{\"greeting\":\"Hello World!\"}";

    @GET
    @Produces(MediaType.APPLICATION_JSON)
    public String greeting() {
        return GREETING;
    }
}
