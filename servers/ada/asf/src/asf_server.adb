--  The lab's ASF server: the REST API of Ada Servlet (ASF's REST support
--  moved there in 2018) on its AWS container.  One Servlet.Rest operation,
--  GET /api, answers the greeting; the REST servlet is mapped to /* so any
--  other path is 404.
--
--  Settings as in the published study for ASF on AWS: Max_Connection =
--  WORKERS (unset: AWS's own default, 5), accept queue BACKLOG (512), reuse
--  address, listening on BIND:PORT (default 127.0.0.1:8080).

with Ada.Command_Line;
with Ada.Exceptions;
with Ada.Text_IO;

with AWS.Config.Set;

with Servlet.Core.Rest;
with Servlet.Rest;
with Servlet.Server.Web;

with Lab_Settings; use Lab_Settings;   --  servers/ada/labenv

with Greeting_API;

procedure ASF_Server is

   Api : aliased Servlet.Core.Rest.Rest_Servlet;
   App : aliased Servlet.Core.Servlet_Registry;
   WS  : Servlet.Server.Web.AWS_Container;

begin
   --  The settings are read inside the block, so that an invalid one reaches
   --  the handler below (a message, exit 1), not the runtime's.
   declare
      Bind    : constant String := Lab_Settings.Bind;
      Port    : constant Positive := Lab_Settings.Port;
      Backlog : constant Positive := Lab_Settings.Backlog;
      Workers : Natural :=   --  0: AWS's default
        (if Workers_Given then Lab_Settings.Workers (5) else 0);

      procedure Setup (Config : in out AWS.Config.Object) is
      begin
         AWS.Config.Set.Server_Name (Config, "lab-asf");
         AWS.Config.Set.Server_Host (Config, Bind);
         AWS.Config.Set.Server_Port (Config, Port);
         if Workers > 0 then
            AWS.Config.Set.Max_Connection (Config, Workers);
         end if;
         Workers := AWS.Config.Max_Connection (Config);
         AWS.Config.Set.Accept_Queue_Size (Config, Backlog);
         AWS.Config.Set.Reuse_Address (Config, True);
      end Setup;
   begin
      WS.Configure (Setup'Access);

      App.Add_Servlet (Name => "api", Server => Api'Unchecked_Access);
      App.Add_Mapping (Name => "api", Pattern => "/*");
      Servlet.Rest.Register (App, Greeting_API.API_Greeting.Definition);
      WS.Register_Application ("", App'Unchecked_Access);
      WS.Start;

      Ada.Text_IO.Put_Line
        ("asf_server: Ada Servlet REST on AWS listening on "
         & Endpoint (Bind, Port) & " (backlog " & Image (Backlog) & ") with "
         & Image (Workers) & " tasks");
      Ada.Text_IO.Flush;
   end;

   --  Serve until the process is terminated (SIGTERM's default action).
   loop
      delay 3600.0;
   end loop;
exception
   when E : Invalid_Setting =>
      Ada.Text_IO.Put_Line
        (Ada.Text_IO.Standard_Error,
         "asf_server: " & Ada.Exceptions.Exception_Message (E));
      Ada.Command_Line.Set_Exit_Status (Ada.Command_Line.Failure);
end ASF_Server;
