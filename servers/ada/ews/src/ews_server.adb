--  The lab's EWS server: Simon Wright's Embedded Web Server, one task that
--  serves every connection (select on all sockets).  A dynamic response
--  registered for /api answers the greeting as application/json; any other
--  path gets EWS's own 404.
--
--  EWS always listened on every interface with GNAT's default backlog (15);
--  the lab's patch (ews-bind.patch) adds At_Address and With_Backlog to
--  EWS.Server.Serve, so it listens on BIND:PORT with backlog BACKLOG.
--  WORKERS is accepted and ignored: EWS has one task by design.

with Ada.Command_Line;
with Ada.Exceptions;
with Ada.Text_IO;

with GNAT.Sockets;

with EWS.Dynamic;
with EWS.HTTP;
with EWS.Server;
with EWS.Types;

with Lab_Settings; use Lab_Settings;   --  servers/ada/labenv

procedure EWS_Server is

   Greeting : constant String := "{""greeting"":""Hello World!""}";

   function Greet
     (From_Request : EWS.HTTP.Request_P) return EWS.Dynamic.Dynamic_Response'Class
   is
      Result : EWS.Dynamic.Dynamic_Response (From_Request);
   begin
      EWS.Dynamic.Set_Content_Type (Result, To => EWS.Types.JSON);
      EWS.Dynamic.Set_Content (Result, Greeting);
      return Result;
   end Greet;

begin
   declare
      Bind    : constant String := Lab_Settings.Bind;
      Port    : constant Positive := Lab_Settings.Port;
      Backlog : constant Positive := Lab_Settings.Backlog;
      Workers : constant Positive := Lab_Settings.Workers (1);
      pragma Unreferenced (Workers);   --  checked, then ignored: one task
   begin
      EWS.Dynamic.Register (Greet'Unrestricted_Access, "/api");
      EWS.Server.Serve
        (Using_Port   => GNAT.Sockets.Port_Type (Port),
         At_Address   => GNAT.Sockets.Inet_Addr (Bind),
         With_Backlog => Backlog);
      Ada.Text_IO.Put_Line
        ("ews_server: EWS listening on " & Endpoint (Bind, Port)
         & " (backlog " & Image (Backlog) & ") with 1 task");
      Ada.Text_IO.Flush;
   end;
   --  EWS's server task runs until the process is terminated.
exception
   when E : Invalid_Setting =>
      Ada.Text_IO.Put_Line
        (Ada.Text_IO.Standard_Error,
         "ews_server: " & Ada.Exceptions.Exception_Message (E));
      Ada.Command_Line.Set_Exit_Status (Ada.Command_Line.Failure);
end EWS_Server;
