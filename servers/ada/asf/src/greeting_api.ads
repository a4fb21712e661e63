--  The greeting as a Servlet.Rest operation: GET /api.

with Servlet.Rest.Operation;

package Greeting_API is

   procedure Get_Greeting (Req    : in out Servlet.Rest.Request'Class;
                           Reply  : in out Servlet.Rest.Response'Class;
                           Stream : in out Servlet.Rest.Output_Stream'Class);

   package API_Greeting is
     new Servlet.Rest.Operation (Handler => Get_Greeting'Access,
                                 Method  => Servlet.Rest.GET,
                                 URI     => "/api");

end Greeting_API;
