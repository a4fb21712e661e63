with AWS.Messages;
with AWS.MIME;

package body Greeting_Service is

   Not_Found_Body : constant String := "Not Found" & ASCII.LF;

   function Callback (Request : AWS.Status.Data) return AWS.Response.Data is
   begin
      if AWS.Status.URI (Request) = "/api" then
         return AWS.Response.Build ("application/json", Greeting);
      else
         return AWS.Response.Build
           (AWS.MIME.Text_Plain, Not_Found_Body, AWS.Messages.S404);
      end if;
   end Callback;

end Greeting_Service;
