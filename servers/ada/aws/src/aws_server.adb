--  The lab's AWS server: one callback, GET /api answers the greeting as
--  application/json, every other path 404.
--
--  Configured as in the published Ada-vs-Java study (Carrez, 2017):
--  Max_Connection = number of tasks (here WORKERS, default 8), an accept
--  queue of 512 and SO_REUSEADDR.  The port comes from PORT (default 8080).

with Ada.Environment_Variables;
with Ada.Text_IO;

with AWS.Config.Set;
with AWS.Server;

with Greeting_Service;

procedure AWS_Server is

   --  The value of the environment variable Name as a positive number,
   --  Default when it is unset or not a positive number.
   function Env_Positive (Name : String; Default : Positive) return Positive;

   function Env_Positive (Name : String; Default : Positive) return Positive is
   begin
      if Ada.Environment_Variables.Exists (Name) then
         return Positive'Value (Ada.Environment_Variables.Value (Name));
      end if;
      return Default;
   exception
      when Constraint_Error =>
         Ada.Text_IO.Put_Line
           (Ada.Text_IO.Standard_Error,
            "aws_server: ignoring invalid " & Name & ", using"
            & Positive'Image (Default));
         return Default;
   end Env_Positive;

   Port    : constant Positive := Env_Positive ("PORT", 8080);
   Workers : constant Positive := Env_Positive ("WORKERS", 8);

   Config     : AWS.Config.Object := AWS.Config.Get_Current;
   Web_Server : AWS.Server.HTTP;

begin
   AWS.Config.Set.Server_Name (Config, "lab-aws");
   AWS.Config.Set.Server_Port (Config, Port);
   AWS.Config.Set.Max_Connection (Config, Workers);
   AWS.Config.Set.Accept_Queue_Size (Config, 512);
   AWS.Config.Set.Reuse_Address (Config, True);

   AWS.Server.Start (Web_Server, Greeting_Service.Callback'Access, Config);

   Ada.Text_IO.Put_Line
     ("aws_server: AWS listening on port" & Positive'Image (Port)
      & " with" & Positive'Image (Workers) & " tasks");
   Ada.Text_IO.Flush;

   --  Serve until the process is terminated (SIGTERM's default action).
   AWS.Server.Wait (AWS.Server.Forever);
end AWS_Server;
